package cli

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/output"
)

// analysisCommand builds a report subcommand that opens a recording, applies
// the common filters and hands both to run.
func analysisCommand(use, short string, bind func(*cobra.Command), run func(io.Writer, *explain.Source, source.Filter, *filterFlags, *cobra.Command) error) *cobra.Command {
	var f filterFlags
	cmd := &cobra.Command{
		Use:   use + " FILE [filters]",
		Short: short,
		Example: "  whyslow report " + use + " rec.db\n" +
			"  whyslow report " + use + " rec.db --pid 4242 --begin +2s --end +10s --min 1ms\n" +
			"  whyslow report " + use + " rec.db --comm postgres --json",
		Args: cobra.ExactArgs(1),
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
			bw := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
			defer bw.Flush()
			// The header goes out with the first line of the result: an
			// analysis that fails prints its error alone.
			var w io.Writer = bw
			// A machine format of its own (log's --format csv|json) has no header.
			if ff := cmd.Flags().Lookup("format"); !f.json && (ff == nil || ff.Value.String() == "text") {
				w = &headed{w: bw, header: func(w io.Writer) { output.Header(w, src, flt, f.utc) }}
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

// withLost wraps a JSON result with the recording's lost-event counts.
func withLost(s *explain.Source, v any) any {
	return struct {
		Lost   map[string]uint64 `json:"lost_events"`
		Level  string            `json:"level"`
		Result any               `json:"result"`
	}{s.Lost, s.Meta["level"], v}
}

func slowOf(s *explain.Source) string {
	var ns int64
	fmt.Sscan(s.Meta["slow_ns"], &ns)
	if ns == 0 {
		ns = 1e6
	}
	return fmt.Sprintf("%dus", ns/1000)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// levelNote says, in one line at the top of an analysis, what a recording
// below --full cannot show it: at the default level no syscall was hooked,
// and its rows are the waits inside calls; at --syscalls, fast calls are
// counted, not listed.
func levelNote(w io.Writer, s *explain.Source, analysisName string) {
	listing := analysisName == "top" || analysisName == "log"
	switch {
	case s.WaitsOnly():
		what := map[string]string{
			"stats": "latencies are of the waits inside calls (one per wait), and calls that never waited are not counted",
			"freq":  "the histograms are of the waits inside calls (one per wait), and calls that never waited are not in them",
			"top":   "these are the longest waits inside calls (one row per wait), not whole calls",
			"log":   "one row per wait inside a call; calls that never waited are not here",
		}[analysisName]
		fmt.Fprintf(w, "(default-level recording: no syscall was hooked; %s: record with --syscalls for every call)\n", what)
	case !s.Full() && listing:
		fmt.Fprintf(w, "(--syscalls recording: calls faster than %s that did not block are counted, not listed)\n", slowOf(s))
	}
}

// headed writes header before the first bytes written through it.
type headed struct {
	w      io.Writer
	header func(io.Writer)
	done   bool
}

func (h *headed) Write(p []byte) (int, error) {
	if !h.done {
		h.done = true
		h.header(h.w)
	}
	return h.w.Write(p)
}
