package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
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
(-- CMD). Stops at the duration, at Ctrl-C, or when the command exits. The
file is a DuckDB database (docs/trace-format.md): question it with
'whyslow report' or 'whyslow sql'.`,
		Example: `  whyslow record -o rec.db -d 30s
  whyslow record -o rec.db --full -- ./server`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output == "" {
				return usageErr("record needs -o FILE")
			}
			if o.pid != 0 && len(args) > 0 {
				return usageErr("give -p PID or a command, not both")
			}
			if o.pid < 0 {
				return usageErr("invalid pid %d", o.pid)
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
	copts, err := o.capture.preflight(argv, o.pid)
	if err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	res, err := recorder.Record(ctx, recorder.Config{
		Path: o.output, Capture: copts, Command: argv, PID: o.pid, Duration: o.duration, Status: statusWriter(),
	})
	if res == nil {
		return err
	}
	var lost uint64
	for _, n := range res.Lost {
		lost += n
	}
	fmt.Fprintf(os.Stderr, "recorded %d events in %s to %s", res.Rows, time.Since(res.Started).Round(time.Millisecond), o.output)
	if lost > 0 {
		fmt.Fprintf(os.Stderr, " (%d lost: %v)", lost, res.Lost)
	}
	fmt.Fprintln(os.Stderr)
	if err != nil {
		return err
	}
	if len(argv) > 0 {
		return childExit(res.ExitCode)
	}
	return nil
}
