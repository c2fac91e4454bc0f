package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/output"
	"github.com/whyslow/whyslow/internal/recorder"
)

type recordOptions struct {
	capture  captureFlags
	output   string
	duration time.Duration
	pid      int
}

func newRecord() *cobra.Command {
	var o recordOptions
	cmd := &cobra.Command{
		Use:   "record -o FILE [--full] [-d DURATION] [-p PID | -- CMD ARGS...]",
		Short: "Record kernel activity into a DuckDB file to analyse many ways",
		Long: `Records system-wide by default, or a process tree (-p PID) or a command
(-- CMD). Stops at the duration, at Ctrl-C, or when the command exits. With a
command: SIGTERM, SIGHUP and SIGINT sent to whyslow are passed on to it, and
the recording ends when it exits; a second signal, or the duration, ends the
recording at once while the command runs on (whyslow says so, exit 0).
Without a command it says on stderr when capture is attached ("whyslow:
recording system-wide to rec.db until Ctrl-C"): what starts after that line
is seen. The file is a DuckDB database (docs/trace-format.md): question it
with 'whyslow report' or 'whyslow sql'.`,
		Example: `  whyslow record -o rec.db -d 30s
  whyslow record -o rec.db --full -- ./server`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output == "" {
				return usageErr("record needs -o FILE")
			}
			if o.pid != 0 && len(args) > 0 {
				return usageErr("give -p PID or a command, not both")
			}
			if cmd.Flags().Changed("pid") && (o.pid <= 0 || o.pid > maxPID) {
				return usageErr("-p %d: not a pid", o.pid)
			}
			if o.duration < 0 {
				return usageErr("-d must be a positive duration, got %v", o.duration)
			}
			return runRecord(o, args)
		},
	}
	o.capture.bind(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "recording file to create (DuckDB)")
	cmd.Flags().DurationVarP(&o.duration, "duration", "d", 0, "stop after this long")
	cmd.Flags().IntVarP(&o.pid, "pid", "p", 0, "record this process tree only")
	return cmd
}

func runRecord(o recordOptions, argv []string) error {
	copts, choice, err := o.capture.preflight(argv, o.pid)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	var forward chan os.Signal
	if len(argv) > 0 {
		stop()
		ctx, forward, stop = commandSignals()
	}
	defer stop()
	cfg := recorder.Config{
		Path: o.output, Capture: copts, Command: argv, PID: o.pid, Duration: o.duration, Status: statusWriter(),
		Forward: forward, LeaveRunning: true,
	}
	if len(argv) == 0 { // a command's own output says it has started
		cfg.Announce = func() { announce(o.pid, o.output, o.duration) }
	}
	if choice.sampled && len(argv) == 0 && o.pid == 0 {
		return withCode(ExitNoCapture, fmt.Errorf("a system-wide recording needs the eBPF capture (%s): the sampled one follows a command or -p PID", choice.why))
	}
	res, err := record(ctx, cfg, &choice)
	if res == nil {
		return err
	}
	what := "events"
	if choice.sampled {
		what = "samples"
	}
	fmt.Fprintf(os.Stderr, "recorded %d %s in %s to %s", res.Rows, what, time.Since(res.Started).Round(time.Millisecond), format.Safe(o.output))
	if lost, sources := output.LostWords(res.Lost); lost > 0 {
		fmt.Fprintf(os.Stderr, " (%d lost: %s)", lost, sources)
	}
	if n := res.Lost[event.LostRebuilt]; n > 0 {
		fmt.Fprintf(os.Stderr, " (%d context switches the kernel did not report, their waits rebuilt)", n)
	}
	if res.HeldMost > 0 {
		// The spool's loader waited for the CPUs (capture/pace.go): the
		// time after the command went to storing what it held.
		fmt.Fprintf(os.Stderr, " (up to %s held while the CPUs were busy, stored when they were not)", format.Bytes(uint64(res.HeldMost)))
	}
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return err
	}
	if res.StillRunning {
		fmt.Fprintf(os.Stderr, "whyslow: the recording ended; %s (pid %d) still runs\n", argv[0], res.TargetPID)
		return nil
	}
	if len(argv) > 0 {
		return childExit(res.ExitCode)
	}
	return nil
}

// announce says, once capture is attached, what is recorded and until when:
// what a process started from now on does is seen.
func announce(pid int, path string, d time.Duration) {
	what := "system-wide"
	if pid != 0 {
		what = fmt.Sprintf("pid %d and its descendants", pid)
	}
	if path != "" {
		what += " to " + format.Safe(path)
	}
	until := "until Ctrl-C"
	if pid != 0 {
		until = "until it exits or Ctrl-C"
	}
	if d > 0 {
		until = fmt.Sprintf("for %s, or %s", d, until)
	}
	fmt.Fprintf(os.Stderr, "whyslow: recording %s %s\n", what, until)
}

// commandSignals is record's way with signals while its command runs:
// SIGTERM and SIGHUP are passed on to the command, which ends the recording
// when it exits; so is SIGINT, unless it ended the command already (Ctrl-C
// at the terminal reaches both). A second signal ends the recording at once,
// leaving the command running.
func commandSignals() (context.Context, chan os.Signal, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	forward := make(chan os.Signal, 4)
	go func() {
		n := 0
		for sig := range sigs {
			if n++; n > 1 {
				cancel()
				continue
			}
			if sig == os.Interrupt {
				time.AfterFunc(200*time.Millisecond, func() {
					select {
					case forward <- sig:
					default:
					}
				})
				continue
			}
			forward <- sig
		}
	}()
	return ctx, forward, func() { signal.Stop(sigs); close(sigs); cancel() }
}
