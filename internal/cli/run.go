package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/recorder"
)

type runOptions struct {
	capture   captureFlags
	jsonPath  string
	htmlPath  string
	recording string
	linger    time.Duration
}

func newRun() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command and explain where its wall time went",
		Long: `Runs CMD as a child with its stdin, stdout and stderr untouched, follows it,
its threads and all its descendants, and when it exits prints to stderr where
its time went, a verdict with evidence, and which other processes caused its
waits. whyslow exits with the command's exit code (128+N for a signal death).

Where eBPF cannot load (no CAP_BPF and CAP_PERFMON, lockdown, an old kernel)
it samples the command's threads in /proc instead (--sampler, --hz), says so
in one line, and gives the shares of the wall time with their error bounds.`,
		Example: `  whyslow run -- python3 app.py
  whyslow run --json out.json -o rec.db -- ./build.sh`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runRun(o, args) },
	}
	o.capture.bind(cmd.Flags())
	cmd.Flags().StringVar(&o.jsonPath, "json", "", "also write the explanation as JSON (schema whyslow.run/v1) to this file")
	cmd.Flags().StringVar(&o.htmlPath, "html", "", "also write the explanation as a self-contained HTML report to this file")
	cmd.Flags().StringVarP(&o.recording, "output", "o", "", "keep the recording in this file (DuckDB) for 'whyslow report'")
	cmd.Flags().DurationVar(&o.linger, "linger", time.Second, "after the command exits, keep recording up to this long while data it dirtied may still be written back (not at all if it dirtied none)")
	return cmd
}

func runRun(o runOptions, argv []string) error {
	copts, choice, err := o.capture.preflight(argv, 0)
	if err != nil {
		return err
	}
	if err := o.checkOutputs(); err != nil {
		return err
	}
	keep := o.recording != ""
	path, cleanup, err := recordingPath(o.recording)
	if err != nil {
		return err
	}
	defer cleanup()
	// Like time(1): Ctrl-C reaches the command from the terminal; whyslow waits
	// for it and explains. SIGTERM and SIGHUP sent to whyslow are passed on.
	ignored := make(chan os.Signal, 1)
	signal.Notify(ignored, os.Interrupt, syscall.SIGQUIT)
	defer signal.Stop(ignored)
	forward := make(chan os.Signal, 4)
	signal.Notify(forward, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(forward)

	// The explanation's connection is readied while the programs load.
	var ready *source.Readied
	defer func() { ready.Close() }()
	res, err := record(context.Background(), recorder.Config{
		Path: path, Capture: copts, Command: argv, Linger: o.linger, Forward: forward, KeepOpen: true, Temporary: !keep,
		Created: func(db *sql.DB) { ready.Close(); ready = source.Ready(db) },
	}, &choice)
	if err != nil {
		if res == nil {
			return err
		}
		var said recorder.Reported
		if !errors.As(err, &said) {
			report(err) // the recording may still explain something
		}
	}
	src, done, err := finishedSource(res, path, keep)
	if err != nil {
		report(err)
		return childExit(res.ExitCode)
	}
	src.Use(ready)
	if choice.sampled {
		o.sampledOutputs(src)
	} else {
		o.explainOutputs(src, path, uint32(res.TargetPID))
	}
	if err := done(); err != nil {
		report(err)
	}
	if keep {
		fmt.Fprintf(os.Stderr, "\nrecording kept in %s (whyslow report --help)\n", path)
	}
	return childExit(res.ExitCode)
}

// checkOutputs refuses, before the command runs, outputs that could not be
// written after it: an HTML report that would overwrite a file, or a
// directory whyslow cannot write in.
func (o runOptions) checkOutputs() error {
	if o.htmlPath != "" {
		if _, err := os.Lstat(o.htmlPath); err == nil {
			return usageErr("%s already exists: choose another name or remove it", o.htmlPath)
		}
		if err := writableDir(o.htmlPath); err != nil {
			return err
		}
	}
	return writableDir(o.jsonPath)
}

// sampledOutputs explains a sampled recording, in JSON too when asked.
// Its errors are reported, not returned: the command's exit code is
// whyslow's.
func (o runOptions) sampledOutputs(src *explain.Source) {
	if o.htmlPath != "" {
		report(fmt.Errorf("--html: the sampled capture has no HTML report yet; its explanation is above"))
	}
	if err := sampledTo(src, o.jsonPath); err != nil {
		report(err)
	}
}

// explainOutputs explains a traced recording of the target pid, in JSON
// and HTML too when asked. Its errors are reported, not returned: the
// command's exit code is whyslow's.
func (o runOptions) explainOutputs(src *explain.Source, path string, pid uint32) {
	x, err := explainTo(src, pid, o.jsonPath)
	if err != nil {
		report(err)
	}
	if o.htmlPath != "" {
		if err := htmlFrom(src, path, pid, x, o.htmlPath); err != nil {
			report(err)
		}
	}
}
