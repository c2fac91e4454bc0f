package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/recorder"
)

type attachOptions struct {
	capture   captureFlags
	pid       int
	duration  time.Duration
	jsonPath  string
	recording string
}

func newAttach() *cobra.Command {
	var o attachOptions
	cmd := &cobra.Command{
		Use:   "attach -p PID [flags]",
		Short: "Watch a running process and explain where its time went",
		Long: `Follows a running process, its threads and its descendants until the
duration passes, Ctrl-C, or the process exits; then prints where its time went,
a verdict with evidence, and which other processes caused its waits. Where
eBPF cannot load, it samples the process's threads in /proc instead
(--sampler, --hz), and says so in one line.`,
		Example: `  whyslow attach -p 4242 -d 10s
  whyslow attach -p $(pgrep -o apache2) --requests -d 30s   # each request, slowest first`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.pid <= 0 || o.pid > maxPID {
				return usageErr("attach needs -p PID (a positive process id)")
			}
			if o.duration < 0 {
				return usageErr("-d must be a positive duration, got %v", o.duration)
			}
			return runAttach(o)
		},
	}
	o.capture.bind(cmd.Flags())
	cmd.Flags().IntVarP(&o.pid, "pid", "p", 0, "process to follow")
	cmd.Flags().DurationVarP(&o.duration, "duration", "d", 0, "stop after this long (default: until Ctrl-C or the process exits)")
	cmd.Flags().StringVar(&o.jsonPath, "json", "", "also write the explanation as JSON (whyslow.run/v1; with --requests whyslow.requests/v1) to this file")
	cmd.Flags().StringVarP(&o.recording, "output", "o", "", "keep the recording in this file (DuckDB) for 'whyslow report'")
	return cmd
}

func runAttach(o attachOptions) error {
	copts, choice, err := o.capture.preflight(nil, o.pid)
	if err != nil {
		return err
	}
	if err := writableDir(o.jsonPath); err != nil {
		return err
	}
	keep := o.recording != ""
	path, cleanup, err := recordingPath(o.recording)
	if err != nil {
		return err
	}
	defer cleanup()
	ctx, stop := interruptible()
	defer stop()
	res, err := record(ctx, recorder.Config{
		Path: path, Capture: copts, PID: o.pid, Duration: o.duration, Status: statusWriter(), KeepOpen: true, Temporary: !keep,
		Announce: func() { announce(o.pid, o.recording, o.duration) },
	}, &choice)
	if err != nil {
		if res == nil {
			return err // capture could not start: exit 1, or 4 for a missing privilege
		}
		report(err)
	}
	src, done, err := finishedSource(res, path, keep)
	if err != nil {
		return err
	}
	if choice.sampled {
		err = sampledTo(src, o.jsonPath)
	} else if copts.Requests {
		// A server: its requests, each explained, say more than one verdict
		// over the whole window.
		err = requestsTo(src, path, o.jsonPath)
	} else {
		_, err = explainTo(src, uint32(o.pid), o.jsonPath)
	}
	if cerr := done(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(os.Stderr, "\nrecording kept in %s\n", path)
	}
	return nil
}

func statusWriter() *os.File {
	if stderrIsTerminal() {
		return os.Stderr
	}
	return nil
}
