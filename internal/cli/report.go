package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/output"
	"github.com/whyslow/whyslow/internal/recorder"
	"github.com/whyslow/whyslow/internal/store"
)

// filterFlags are common to every analysis.
type filterFlags struct {
	timerange, begin, end string
	utc                   bool
	pids, tids            []uint
	comms                 []string
	file                  string
	minsize, maxsize      string
	min, max              time.Duration
	limit                 int
	json                  bool
}

func (f *filterFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.timerange, "timerange", "", "[BEGIN,END]: only what overlaps this range")
	fs.StringVar(&f.begin, "begin", "", "start: hh:mm:ss[.ns], a date and time, or +offset from the recording start (+2.5s)")
	fs.StringVar(&f.end, "end", "", "end, in the same forms as --begin")
	fs.BoolVar(&f.utc, "utc", false, "read and print times in UTC")
	fs.BoolVar(&f.utc, "gmt", false, "alias of --utc")
	fs.UintSliceVar(&f.pids, "pid", nil, "only these processes (comma-separated)")
	fs.UintSliceVar(&f.tids, "tid", nil, "only these threads")
	fs.StringSliceVar(&f.comms, "comm", nil, "only these command names")
	fs.StringVar(&f.file, "file", "", "only files whose path matches this glob")
	fs.StringVar(&f.minsize, "minsize", "", "only operations of at least this many bytes (4096, 4k, 1M)")
	fs.StringVar(&f.maxsize, "maxsize", "", "only operations of at most this many bytes")
	fs.DurationVar(&f.min, "min", 0, "only operations at least this slow (10ms)")
	fs.DurationVar(&f.max, "max", 0, "only operations at most this slow")
	fs.IntVar(&f.limit, "limit", 10, "rows per table")
	fs.BoolVar(&f.json, "json", false, "print JSON (docs/report-json.md) instead of text")
}

func (f *filterFlags) filter(src *explain.Source) (source.Filter, error) {
	out := source.NoFilter()
	out.Limit = f.limit
	if f.limit <= 0 {
		return out, usageErr("--limit must be positive")
	}
	var err error
	if f.timerange != "" {
		if out.Begin, out.End, err = src.Clock.ParseRange(f.timerange, f.utc); err != nil {
			return out, withCode(ExitUsage, err)
		}
	}
	if f.begin != "" {
		if out.Begin, err = src.Clock.ParseTime(f.begin, f.utc); err != nil {
			return out, withCode(ExitUsage, err)
		}
	}
	if f.end != "" {
		if out.End, err = src.Clock.ParseTime(f.end, f.utc); err != nil {
			return out, withCode(ExitUsage, err)
		}
	}
	for _, p := range f.pids {
		out.PIDs = append(out.PIDs, uint32(p))
	}
	for _, p := range f.tids {
		out.TIDs = append(out.TIDs, uint32(p))
	}
	// Names are stored as text (event.EncodeText): a name typed with bytes
	// that are not UTF-8 is matched as the recording holds it.
	for _, c := range f.comms {
		out.Comms = append(out.Comms, event.EncodeText(c))
	}
	out.FileGlob = f.file
	if !utf8.ValidString(f.file) {
		// Its escapes are literal backslashes to GLOB, which reads a
		// backslash as an escape of its own.
		out.FileGlob = strings.ReplaceAll(event.EncodeText(f.file), `\`, `\\`)
	}
	if out.MinSize, err = parseSize(f.minsize); err != nil {
		return out, err
	}
	if out.MaxSize, err = parseSize(f.maxsize); err != nil {
		return out, err
	}
	out.Min, out.Max = f.min, f.max
	switch {
	case out.Begin != 0 && out.End != 0 && out.End < out.Begin:
		return out, usageErr("the end of the time range comes before its beginning")
	case f.min < 0 || f.max < 0:
		return out, usageErr("--min and --max are durations of at least 0")
	case f.max > 0 && f.min > f.max:
		return out, usageErr("--min %v is more than --max %v", f.min, f.max)
	case out.MaxSize >= 0 && out.MinSize > out.MaxSize:
		return out, usageErr("--minsize is more than --maxsize")
	}
	for _, p := range f.pids {
		if p <= 0 || p > maxPID {
			return out, usageErr("--pid %d: not a pid", p)
		}
	}
	return out, nil
}

// maxPID is the kernel's largest (PID_MAX_LIMIT, 2^22): a bigger number is
// no process, and one past 2^32 would wrap to another.
const maxPID = 1 << 22

// holdsProcess refuses a --pid the recording never saw: explaining it would
// invent an answer (a process with no waits looks 100% on CPU).
func holdsProcess(src *explain.Source, pid uint32) error {
	var n int
	if err := src.DB.QueryRow("SELECT count(*) FROM processes WHERE pid = ?", pid).Scan(&n); err != nil {
		return withCode(ExitBadFile, fmt.Errorf("reading the recording's processes: %w", err))
	}
	if n == 0 {
		return usageErr("--pid %d: the recording holds no such process ('whyslow sql REC \"SELECT * FROM processes\"' lists them)", pid)
	}
	return nil
}

func openSource(path string) (*explain.Source, func(), error) {
	rec, err := store.Open(path)
	if err != nil {
		return nil, nil, openErr(err)
	}
	return explain.NewSource(rec), func() { rec.Close() }, nil
}

// openErr is a recording that did not open: a bad file (exit 3), or a path
// no recording can have (exit 2, as a bad argument).
func openErr(err error) error {
	if errors.Is(err, store.ErrBadPath) {
		return withCode(ExitUsage, err)
	}
	return withCode(ExitBadFile, err)
}

// finishedSource is the recording run or attach just made: still open when
// the recorder left it so (no close, checkpoint and reopen before the
// answer), else opened from its file (a recording stopped by a full disk).
// A temporary recording the recorder left open (keep false) is not closed
// by done: whyslow removes its files and exits next, and closing it first
// (DuckDB freeing its catalog and buffers one by one, ~4 ms of every run)
// would only delay the exit, which gives it all back at once.
func finishedSource(res *recorder.Result, path string, keep bool) (src *explain.Source, done func() error, err error) {
	rec := res.Recording
	if rec == nil {
		if rec, err = store.Open(path); err != nil {
			return nil, nil, openErr(err)
		}
	} else if !keep {
		return explain.NewSource(rec), func() error { return nil }, nil
	}
	return explain.NewSource(rec), rec.Close, nil
}

func newReport() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report ANALYSIS FILE [filters]",
		Short: "Analyse a recording: explain, requests, usage, stats, freq, top, log, html",
		Long: `Analyses of a recording made by 'whyslow record' (or run/attach -o).
usage, stats, freq, top, log and requests take the same filters (time range,
processes, threads, names, durations, sizes) and --json; explain and html
take --pid (explain also --json) and cover the whole recording.`,
		Example: `  whyslow record -o rec.db -d 30s
  whyslow report explain rec.db --pid 4242
  whyslow report usage rec.db --begin +5s --end +15s`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("report needs an analysis: explain, requests, usage, stats, freq, top or log (see 'whyslow report --help')")
			}
			return usageErr("unknown analysis %q: explain, requests, usage, stats, freq, top or log", args[0])
		},
	}
	cmd.AddCommand(newExplain())
	cmd.AddCommand(newUsageReport(), newStatsReport(), newFreqReport(), newTopReport(), newLogReport())
	cmd.AddCommand(newRequestsReport())
	cmd.AddCommand(newHTMLReport())
	return cmd
}

func newExplain() *cobra.Command {
	var f filterFlags
	var pid uint
	cmd := &cobra.Command{
		Use:   "explain FILE [--pid PID]",
		Short: "Where a process's time went: verdict, evidence, blame (what run and attach print)",
		Example: `  whyslow run -o rec.db -- make -j4
  whyslow report explain rec.db
  whyslow report explain rec.db --pid 4242 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, done, err := openSource(args[0])
			if err != nil {
				return err
			}
			defer done()
			whole := pid == 0
			if pid == 0 {
				p, _ := strconv.Atoi(src.Meta["target_pid"])
				if p <= 0 {
					return usageErr("this recording has no target process: give --pid")
				}
				pid = uint(p)
			} else if err := holdsProcess(src, uint32(pid)); err != nil {
				return err
			}
			if src.Meta["capture"] == recorder.CaptureSampled {
				// Sampled from /proc: shares of the wall time by samples.
				s, err := reports.SampledTime(src.Source)
				if err != nil {
					return err
				}
				if f.json {
					return output.SampledExplanationJSON(cmd.OutOrStdout(), s)
				}
				output.SampledExplanation(cmd.OutOrStdout(), s)
				return nil
			}
			x, err := explain.Explain(src, uint32(pid))
			if err != nil {
				return err
			}
			if f.json {
				return output.ExplanationJSON(cmd.OutOrStdout(), x)
			}
			if whole && src.Meta["requests"] == "true" {
				// A server's recording: its requests first, then its
				// processes' time (a master waiting for signals is idle).
				rf := source.NoFilter()
				rf.Limit = 5
				r, err := requests.Find(src, (&requestFlags{}).options(rf))
				if err != nil {
					return err
				}
				if r.Count > 0 {
					output.Requests(cmd.OutOrStdout(), r, args[0])
					output.Heading(cmd.OutOrStdout(), "The target's time as a whole")
				}
			}
			output.Explanation(cmd.OutOrStdout(), x)
			return nil
		},
	}
	cmd.Long = `Where the recording's target (or --pid's) spent its time: the verdict on its
critical path, the evidence (files, devices, network peers) and who else made
it wait. On a recording made with --requests, the target's requests come
first (as 'report requests' prints them, the 5 slowest explained).`
	cmd.Flags().UintVar(&pid, "pid", 0, "the process to explain (default: the recording's target)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print JSON (schema whyslow.run/v1)")
	return cmd
}

// sampledTo prints the explanation of a sampled run to stderr, and JSON to
// jsonPath when given.
func sampledTo(src *explain.Source, jsonPath string) error {
	s, err := reports.SampledTime(src.Source)
	if err != nil {
		return fmt.Errorf("explaining: %w", err)
	}
	output.SampledExplanation(os.Stderr, s)
	if jsonPath != "" {
		f, err := os.Create(jsonPath)
		if err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
		defer f.Close()
		return output.SampledExplanationJSON(f, s)
	}
	return nil
}

// explainTo prints the explanation of a finished run to stderr, and JSON to
// a file, and returns it (run --html draws its page from the same one).
func explainTo(src *explain.Source, pid uint32, jsonPath string) (*explain.Explanation, error) {
	x, err := explain.Explain(src, pid)
	if err != nil {
		return nil, fmt.Errorf("explaining: %w", err)
	}
	output.Explanation(os.Stderr, x)
	if jsonPath != "" {
		f, err := os.Create(jsonPath)
		if err != nil {
			return x, fmt.Errorf("writing JSON: %w", err)
		}
		defer f.Close()
		return x, output.ExplanationJSON(f, x)
	}
	return x, nil
}

func writeJSON(w io.Writer, v any) error { return output.JSON(w, v) }
