package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/export"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/store"
)

func newExport() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export FORMAT FILE",
		Short: "Write a recording for other tools: folded, parquet, perfetto, otlp",
		Long: `Writes a recording in another tool's format: folded stacks for flame graphs
(flamegraph.pl, speedscope, inferno), Parquet files for Spark, Trino or DuckDB,
a Perfetto trace for ui.perfetto.dev, or sends its requests as OpenTelemetry
traces to an OTLP endpoint. Formats: docs/export.md, docs/otlp.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("export needs a format: folded, parquet, perfetto or otlp (see 'whyslow export --help')")
			}
			return usageErr("unknown export format %q: folded, parquet, perfetto or otlp", args[0])
		},
	}
	cmd.AddCommand(newExportFolded(), newExportParquet(), newExportPerfetto(), newExportOTLP())
	return cmd
}

// createOutput opens what an export writes: stdout for "" or "-", else a
// new file, never one that exists. The file is written under a temporary
// name beside it and linked to its name by commit: a failure (abort) leaves
// nothing behind, not a truncated trace or an empty report.
func createOutput(path string, stdout io.Writer) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, func() {}, nil
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, nil, nil, usageErr("%s already exists: choose another name or remove it", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating %s: %w", path, err)
	}
	leftOnCrash(f.Name())
	abort = func() { f.Close(); os.Remove(f.Name()) }
	commit = func() error {
		defer os.Remove(f.Name())
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		// A link, not a rename: it fails, rather than replace, if the name
		// was taken meanwhile.
		if err := os.Link(f.Name(), path); err != nil {
			if os.IsExist(err) {
				return usageErr("%s already exists: choose another name or remove it", path)
			}
			return fmt.Errorf("creating %s: %w", path, err)
		}
		return nil
	}
	return f, commit, abort, nil
}

func newExportFolded() *cobra.Command {
	var offcpu, oncpu, byReason bool
	var pids []uint
	var out string
	cmd := &cobra.Command{
		Use:   "folded FILE [--offcpu|--oncpu] [--by-reason]",
		Short: "Folded stacks of off-CPU time (kernel stacks) for flame graphs",
		Long: `Writes folded stacks, one line per distinct stack: frames root first, separated
by ';', then the time in microseconds. Frames: the process "comm (pid)", the
thread "comm (tid)", with --by-reason the off-CPU reason "[disk-write]", then
the kernel stack at the switch-out, outermost first ("[no kernel stack]" for
preemptions). Feed it to flamegraph.pl, inferno-flamegraph or speedscope.

--offcpu (the default) folds the time threads spent off CPU. --oncpu adds
each thread's on-CPU time under "[on-cpu]", split by the kernel stacks of
the default level's CPU samples ("[user]" in user mode: no user stacks are
read), or as that one frame when the recording has no samples; with
--offcpu --oncpu the graph shows all of each thread's time.`,
		Example: `  whyslow export folded rec.db --by-reason > offcpu.folded
  flamegraph.pl --countname=us --title="off-CPU time" offcpu.folded > offcpu.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !offcpu && !oncpu {
				offcpu = true
			}
			src, done, err := openSource(args[0])
			if err != nil {
				return err
			}
			defer done()
			o := reports.StackOptions{OffCPU: offcpu, OnCPU: oncpu}
			for _, p := range pids {
				o.PIDs = append(o.PIDs, uint32(p))
			}
			stacks, err := reports.Stacks(src.Source, o)
			if err != nil {
				return err
			}
			w, commit, abort, err := createOutput(out, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if err := export.Folded(w, stacks, export.FoldedOptions{ByReason: byReason}); err != nil {
				abort()
				return fmt.Errorf("writing folded stacks: %w", err)
			}
			return commit()
		},
	}
	cmd.Flags().BoolVar(&offcpu, "offcpu", false, "fold off-CPU time by kernel stack (the default)")
	cmd.Flags().BoolVar(&oncpu, "oncpu", false, "add each thread's on-CPU time, as one [on-cpu] frame (no stacks: see above)")
	cmd.Flags().BoolVar(&byReason, "by-reason", false, "put the off-CPU reason between the thread and its stack")
	cmd.Flags().UintSliceVar(&pids, "pid", nil, "only these processes (comma-separated)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file (created, never overwritten) instead of stdout")
	return cmd
}

func newExportParquet() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "parquet FILE -o DIR",
		Short: "Every table and view as Parquet files, for Spark, Trino or DuckDB",
		Long: `Writes every table and view of the recording (docs/trace-format.md) as
DIR/NAME.parquet, with the same columns and rows: the raw tables, the
dimension tables and the named views (syscalls, offcpu, block, io, disk, ...).
DIR is created if needed; files already there are never overwritten. The
files appear only when every one is written: an export that fails leaves
DIR as it was.`,
		Example: `  whyslow export parquet rec.db -o rec-parquet/
  duckdb -c "SELECT comm, sum(off_ns) FROM 'rec-parquet/offcpu.parquet' GROUP BY comm"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return usageErr("export parquet needs -o DIR")
			}
			files, err := export.Parquet(args[0], dir)
			if err != nil {
				if errors.Is(err, store.ErrBadPath) {
					return withCode(ExitUsage, err)
				}
				if errors.Is(err, store.ErrNotRecording) || errors.Is(err, os.ErrNotExist) && len(files) == 0 {
					return withCode(ExitBadFile, err)
				}
				return err
			}
			var rows int64
			for _, f := range files {
				rows += f.Rows
			}
			fmt.Fprintf(os.Stderr, "wrote %d tables and views, %d rows, to %s\n", len(files), rows, format.Safe(dir))
			return nil
		},
	}
	cmd.Flags().StringVarP(&dir, "output", "o", "", "the directory to write NAME.parquet files into")
	return cmd
}

func newExportPerfetto() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "perfetto FILE -o TRACE",
		Short: "A Perfetto trace: threads' time on and off CPU, syscalls, wake-ups, devices",
		Long: `Writes a Perfetto protobuf trace (TrackEvent) of the recording, to open in
ui.perfetto.dev or Perfetto's trace processor: a track per process and thread
with slices for on CPU, off CPU by reason and the run queue; a "syscalls"
track under each thread with the streamed syscalls (file or peer, fd, result
and bytes in the args); a flow from the thread that woke another to the
woken; counter tracks for each device's read and write throughput and the
pages dirtied and written back per second. Details: docs/export.md.`,
		Example: `  whyslow export perfetto rec.db -o rec.pftrace   # then open it in ui.perfetto.dev`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr("export perfetto needs -o TRACE (- for stdout)")
			}
			if out == "-" && stdoutIsTerminal() {
				return usageErr("a Perfetto trace is binary: give -o TRACE, or pipe stdout")
			}
			src, done, err := openSource(args[0])
			if err != nil {
				return err
			}
			defer done()
			w, commit, abort, err := createOutput(out, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if err := export.Perfetto(w, src); err != nil {
				abort()
				return fmt.Errorf("writing the Perfetto trace: %w", err)
			}
			return commit()
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the trace file to create (never overwritten; - for stdout)")
	return cmd
}

func stdoutIsTerminal() bool {
	st, err := os.Stdout.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
