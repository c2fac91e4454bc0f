package cli

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis"
	"github.com/whyslow/whyslow/internal/output"
)

// analysisCommand builds a report subcommand that opens a recording, applies
// the common filters and hands both to run.
func analysisCommand(use, short string, bind func(*cobra.Command), run func(io.Writer, *analysis.Source, analysis.Filter, *filterFlags, *cobra.Command) error) *cobra.Command {
	var f filterFlags
	cmd := &cobra.Command{
		Use:   use + " FILE [filters]",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, done, err := openSource(args[0])
			if err != nil {
				return err
			}
			defer done()
			flt, err := f.filter(src)
			if err != nil {
				return err
			}
			// Buffered: log prints a line per operation.
			w := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
			defer w.Flush()
			if !f.json {
				output.Header(w, src, flt, f.utc)
			}
			return run(w, src, flt, &f, cmd)
		},
	}
	f.bind(cmd.Flags())
	if bind != nil {
		bind(cmd)
	}
	return cmd
}

func newLatencyReports() []*cobra.Command {
	var resolution int
	var logLimit int
	return []*cobra.Command{
		analysisCommand("usage", "Who read and wrote how much: per process, per file, block I/O, network (iousagetop)", nil,
			func(w io.Writer, s *analysis.Source, f analysis.Filter, ff *filterFlags, _ *cobra.Command) error {
				u, err := analysis.RunUsage(s, f)
				if err != nil {
					return err
				}
				if ff.json {
					return writeJSON(w, withLost(s, u))
				}
				output.Usage(w, u)
				levelNote(w, s, false)
				return nil
			}),
		analysisCommand("stats", "Latency statistics per syscall class and per disk (iolatencystats)", nil,
			func(w io.Writer, s *analysis.Source, f analysis.Filter, ff *filterFlags, _ *cobra.Command) error {
				st, err := analysis.RunStats(s, f)
				if err != nil {
					return err
				}
				if ff.json {
					return writeJSON(w, withLost(s, st))
				}
				output.Stats(w, st)
				levelNote(w, s, false)
				return nil
			}),
		analysisCommand("freq", "Latency histograms per syscall class (iolatencyfreq)",
			func(c *cobra.Command) {
				c.Flags().IntVar(&resolution, "freq-resolution", 20, "number of buckets between --min and --max")
			},
			func(w io.Writer, s *analysis.Source, f analysis.Filter, ff *filterFlags, _ *cobra.Command) error {
				fr, err := analysis.RunFreq(s, f, resolution)
				if err != nil {
					return usageErr("%v", err)
				}
				if ff.json {
					return writeJSON(w, withLost(s, fr))
				}
				output.Freq(w, fr)
				levelNote(w, s, false)
				return nil
			}),
		analysisCommand("top", "The slowest operations per syscall class (iolatencytop)", nil,
			func(w io.Writer, s *analysis.Source, f analysis.Filter, ff *filterFlags, _ *cobra.Command) error {
				top, err := analysis.RunTop(s, f)
				if err != nil {
					return err
				}
				if ff.json {
					return writeJSON(w, withLost(s, top))
				}
				for _, class := range sortedKeys(top) {
					output.Ops(w, fmt.Sprintf("Top %s latencies", class), top[class], ff.utc)
				}
				levelNote(w, s, true)
				return nil
			}),
		analysisCommand("log", "Every recorded operation in time order (iolog)",
			func(c *cobra.Command) {
				c.Flags().IntVar(&logLimit, "max-rows", 0, "stop after this many rows (0: all)")
			},
			func(w io.Writer, s *analysis.Source, f analysis.Filter, ff *filterFlags, _ *cobra.Command) error {
				ops, err := analysis.RunLog(s, f, logLimit)
				if err != nil {
					return err
				}
				if ff.json {
					return writeJSON(w, withLost(s, ops))
				}
				output.Ops(w, "I/O operations log", ops, ff.utc)
				levelNote(w, s, true)
				return nil
			}),
	}
}

// withLost wraps a JSON result with the recording's lost-event counts.
func withLost(s *analysis.Source, v any) any {
	return struct {
		Lost   map[string]uint64 `json:"lost_events"`
		Level  string            `json:"level"`
		Result any               `json:"result"`
	}{s.Lost, s.Meta["level"], v}
}

func slowOf(s *analysis.Source) string {
	var ns int64
	fmt.Sscan(s.Meta["slow_ns"], &ns)
	if ns == 0 {
		ns = 1e6
	}
	return fmt.Sprintf("%dus", ns/1000)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// levelNote says what a recording below --full holds, under the analyses
// that count calls (and, listing, those that list them: top, log).
func levelNote(w io.Writer, s *analysis.Source, listing bool) {
	switch {
	case s.WaitsOnly():
		fmt.Fprintf(w, "\n(default-level recording: no syscall was hooked; these are the waits inside syscalls, seen when the thread went off CPU, one per wait; calls that never waited are not here: record with --syscalls)\n")
	case !s.Full() && listing:
		fmt.Fprintf(w, "\n(--syscalls recording: calls faster than %s that did not block are counted, not listed)\n", slowOf(s))
	}
}
