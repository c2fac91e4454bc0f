package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/live"
	"github.com/whyslow/whyslow/internal/top"
	"golang.org/x/sys/unix"
)

type topOptions struct {
	every      time.Duration
	batch      bool
	iterations int
	limit      int
	threads    bool
	cgroups    bool
	name       string
	cgroup     string
}

func newTop() *cobra.Command {
	var o topOptions
	cmd := &cobra.Command{
		Use:   "top [-d 1s] [--batch [-n N]]",
		Short: "Live view, system-wide: which processes lose wall time, why, and on what",
		Long: `Shows every process that ran or waited in the last interval, ranked by wall
time lost (waiting for a CPU, disk reads, disk writes, dirty-page throttling,
sync), with a column per reason and the file, socket peer or device it waited
on the longest; devices like iostat; the files waited on and written like
filetop; dirty and writeback memory; pressure (PSI). Numbers are % of one
thread's time in the interval.

Keys: < > sort column, / filter by command, g filter by cgroup, t threads,
c a row per cgroup, p or space pause, h or ? help, q quit.

--batch (or a standard output that is not a terminal) prints plain frames,
one per interval, for scripts. Captures at the default level (docs/top.md).`,
		Example: `  whyslow top
  whyslow top -d 2s --threads
  whyslow top --batch -n 5 --name dd
  whyslow top --cgroups --cgroup docker`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.every < 100*time.Millisecond {
				return usageErr("-d must be at least 100ms, got %s", o.every)
			}
			if o.threads && o.cgroups {
				return usageErr("--threads and --cgroups: a row is a thread or a cgroup, not both")
			}
			if o.iterations < 0 || o.limit < 1 {
				return usageErr("-n must be 0 or more and --limit at least 1")
			}
			return runTop(o)
		},
	}
	cmd.Flags().DurationVarP(&o.every, "delay", "d", time.Second, "interval between frames")
	cmd.Flags().BoolVarP(&o.batch, "batch", "b", false, "print plain frames instead of the interactive view")
	cmd.Flags().IntVarP(&o.iterations, "iterations", "n", 0, "batch: stop after this many frames (0: until interrupted)")
	cmd.Flags().IntVar(&o.limit, "limit", 20, "batch: process rows per frame")
	cmd.Flags().BoolVar(&o.threads, "threads", false, "a row per thread")
	cmd.Flags().BoolVar(&o.cgroups, "cgroups", false, "a row per cgroup, its processes' times summed")
	cmd.Flags().StringVar(&o.name, "name", "", "only commands whose name contains this")
	cmd.Flags().StringVar(&o.cgroup, "cgroup", "", "only processes whose cgroup path contains this")
	return cmd
}

func runTop(o topOptions) error {
	if err := needPrivileges(); err != nil {
		return err
	}
	st := top.NewState(o.every)
	st.Threads, st.Cgroups, st.Name, st.Cgroup, st.Limit = o.threads, o.cgroups, o.name, o.cgroup, o.limit
	ctx, stop := interruptible()
	defer stop()
	sampler := live.Sampler{Every: o.every}
	if o.batch || !isTerminal(os.Stdout) {
		return topBatch(ctx, sampler, st, o.iterations, os.Stdout)
	}
	return topInteractive(ctx, sampler, st)
}

// topBatch prints a frame per interval, plain text, all columns.
func topBatch(ctx context.Context, s live.Sampler, st top.State, n int, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	printed := 0
	var werr error
	err := s.Run(ctx, nil, func(f *live.Frame) {
		if _, err := fmt.Fprintln(w, top.Render(f, st, 0, 0, time.Now())); err != nil {
			werr = fmt.Errorf("writing frames: %w", err) // a closed pipe: stop
			cancel()
		}
		if printed++; n > 0 && printed >= n {
			cancel()
		}
	})
	if werr != nil {
		return werr
	}
	return err
}

// topInteractive runs the terminal view until q, Ctrl-C or a capture error.
// Capture is attached before the screen is taken, so a missing privilege or
// kernel feature is an ordinary one-line error.
func topInteractive(ctx context.Context, s live.Sampler, st top.State) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := tea.NewProgram(top.NewModel(st), tea.WithAltScreen(), tea.WithContext(ctx))
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		err := s.Run(ctx, func(live.Info) { close(ready) }, func(f *live.Frame) {
			p.Send(top.FrameMsg{Frame: f, At: time.Now()})
		})
		if err != nil {
			p.Send(top.ErrMsg{Err: err}) // ends the view, if it runs
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err // nil: interrupted while starting
	case <-ready:
	}
	m, err := p.Run()
	cancel()
	capErr := <-done
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("running the terminal view: %w", err)
	}
	if mm, ok := m.(top.Model); ok && mm.Err != nil {
		return mm.Err
	}
	return capErr
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
