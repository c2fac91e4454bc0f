package recorder

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/whyslow/whyslow/internal/procsample"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/target"
)

// Capture names, in meta "capture", the JSON and the one line that says
// which was used.
const (
	CaptureBPF     = "ebpf"
	CaptureSampled = "sampled"
)

// RecordSampled records the target by looking at its threads in /proc
// (internal/procsample) instead of tracing them: where BPF cannot load. It
// takes the same Config as Record, and gives the same Result; the
// recording's looks are in proc_samples_raw, meta capture 'sampled'.
func RecordSampled(ctx context.Context, cfg Config, hz int) (*Result, error) {
	if len(cfg.Command) == 0 && cfg.PID == 0 {
		return nil, fmt.Errorf("the sampled capture follows a command or a process: give -p PID or a command")
	}
	if cfg.PID != 0 {
		if err := target.Exists(cfg.PID); err != nil {
			return nil, err
		}
	}
	w, err := store.Create(cfg.Path)
	if err != nil {
		return nil, err
	}
	if cfg.Temporary {
		w.CommitEvery(store.TemporaryCommitEvery)
	}
	if cfg.Created != nil {
		cfg.Created(w.DB())
	}
	r := &sampledRun{cfg: cfg, w: w, res: &Result{Started: time.Now(), ExitCode: -1, Lost: map[string]uint64{}}}
	if hz <= 0 {
		hz = procsample.DefaultHz
	}
	if err := r.start(hz); err != nil {
		return r.abandon(err)
	}
	r.watchTarget(ctx)
	// A process we did not start has spent CPU time before we came: only
	// what it spends from now on is the recording's.
	var user0, sys0 time.Duration
	if r.gated == nil {
		user0, sys0, _ = target.ProcCPUTime(cfg.PID)
	}
	runErr := r.sample(ctx)
	user, system := r.awaitTarget(user0, sys0)
	return r.finish(runErr, user, system)
}

// sampledRun is one sampled recording as it goes through its stages: start,
// watch the target, sample, await the target, finish.
type sampledRun struct {
	cfg     Config
	w       *store.Writer
	res     *Result
	gated   *target.Gated // the command we started; nil for a process given by -p
	sampler *procsample.Sampler
	// targetDone is closed when the target has exited.
	targetDone chan struct{}
}

// abandon removes a recording that failed before it began: there is
// nothing in it worth keeping.
func (r *sampledRun) abandon(err error) (*Result, error) {
	r.w.Close(nil)
	os.Remove(r.cfg.Path)
	os.Remove(r.cfg.Path + ".wal")
	return nil, err
}

// start starts the command, held at its exec, or takes the process given,
// and begins the recording. A command it started is killed again when the
// recording cannot begin, so that nothing outlives a failed start.
func (r *sampledRun) start(hz int) error {
	if len(r.cfg.Command) > 0 {
		gated, err := target.Start(r.cfg.Command)
		if err != nil {
			return err
		}
		r.gated = gated
		r.res.TargetPID = gated.PID()
	} else {
		r.res.TargetPID = r.cfg.PID
	}
	err := r.begin(hz)
	if err != nil && r.gated != nil {
		r.gated.Cmd.Process.Kill()
		r.gated.Wait()
	}
	return err
}

// begin makes the sampler, writes the meta a recording starts with, and
// lets a command we started go past its exec: its first instruction comes
// after target_start_mono.
func (r *sampledRun) begin(hz int) error {
	sampler, err := procsample.New(procsample.Options{PID: r.res.TargetPID, Hz: hz,
		Notify: func(line string) { fmt.Fprintln(os.Stderr, "whyslow: "+line) }})
	if err != nil {
		return err
	}
	r.sampler = sampler
	meta := startMeta(r.cfg, "", "", r.res.Started)
	meta["capture"] = CaptureSampled
	meta["hz"] = fmt.Sprint(hz)
	meta["level"] = "sampled"
	if err := r.w.SetMeta(meta); err != nil {
		return err
	}
	r.w.SetMeta(map[string]string{"target_start_mono": fmt.Sprint(monoOf(time.Now()))})
	if r.gated != nil {
		return r.gated.Open()
	}
	return nil
}

// watchTarget closes targetDone when the target exits, and until then
// forwards to a command we started the signals the user sent us.
func (r *sampledRun) watchTarget(ctx context.Context) {
	r.targetDone = make(chan struct{})
	if r.gated == nil {
		go func() {
			waitExit(ctx, r.cfg.PID)
			close(r.targetDone)
		}()
		return
	}
	go func() {
		r.res.ExitCode, _ = r.gated.Wait()
		close(r.targetDone)
	}()
	go func() {
		for {
			select {
			case sig := <-r.cfg.Forward:
				r.gated.Cmd.Process.Signal(sig)
			case <-r.targetDone:
				return
			}
		}
	}()
}

// sample runs the sampler until the target exits, the duration is over,
// the user stops us or the store fails, and returns the sampler's error.
func (r *sampledRun) sample(ctx context.Context) error {
	sctx, stop := context.WithCancel(context.Background())
	sampled := make(chan error, 1)
	go func() { sampled <- r.sampler.Run(sctx, r.w.Write) }()
	if r.cfg.Ready != nil {
		close(r.cfg.Ready)
	}
	if r.cfg.Announce != nil {
		r.cfg.Announce()
	}
	var deadline <-chan time.Time
	if r.cfg.Duration > 0 {
		deadline = time.After(r.cfg.Duration)
	}
	select {
	case <-r.targetDone:
		r.res.TargetEnd = time.Now()
	case <-deadline:
	case <-ctx.Done():
	case <-r.w.Failed():
		fmt.Fprintf(os.Stderr, "whyslow: recording stopped: %v\n", r.w.Err())
	}
	stop()
	return <-sampled
}

// awaitTarget waits for a command we started to end, unless it is to be
// left running, and returns the CPU time the target spent while recorded.
func (r *sampledRun) awaitTarget(user0, sys0 time.Duration) (user, system time.Duration) {
	if r.gated == nil {
		if u, s, ok := target.ProcCPUTime(r.cfg.PID); ok {
			user, system = u-user0, s-sys0
		}
		return user, system
	}
	select {
	case <-r.targetDone:
	default:
		if r.cfg.LeaveRunning {
			r.res.StillRunning = true
		} else {
			<-r.targetDone // as time(1) does; Ctrl-C reached the command too
			r.res.TargetEnd = time.Now()
		}
	}
	if !r.res.StillRunning {
		user, system = r.gated.CPUTime()
	}
	return user, system
}

// finish writes the meta a recording ends with (the sampler's counts, the
// target's end and CPU time) and closes the store, or keeps it open when
// the caller reads it next.
func (r *sampledRun) finish(runErr error, user, system time.Duration) (*Result, error) {
	res, w := r.res, r.w
	st := r.sampler.Stats()
	res.Rows = w.Rows()
	end := time.Now()
	endMeta := map[string]string{
		"end_wall":          end.UTC().Format(time.RFC3339Nano),
		"duration_ns":       fmt.Sprint(end.Sub(res.Started).Nanoseconds()),
		"target_pid":        fmt.Sprint(res.TargetPID),
		"exit_code":         fmt.Sprint(res.ExitCode),
		"target_end_mono":   fmt.Sprint(monoOf(res.TargetEnd)),
		"sample_ticks":      fmt.Sprint(st.Ticks),
		"samples_vanished":  fmt.Sprint(st.Vanished),
		"samples_no_stack":  fmt.Sprint(st.NoStack),
		"samples_most_seen": fmt.Sprint(st.Busiest),
	}
	if user+system > 0 {
		endMeta["target_user_ns"] = fmt.Sprint(user.Nanoseconds())
		endMeta["target_system_ns"] = fmt.Sprint(system.Nanoseconds())
	}
	if werr := w.Err(); werr != nil {
		w.Close(nil)
		return res, Reported{werr}
	}
	if err := w.SetMeta(endMeta); err != nil {
		w.Close(nil)
		return res, err
	}
	if r.cfg.KeepOpen {
		rec, err := w.Finish(res.Lost, r.cfg.Temporary)
		res.Recording = rec
		if err != nil {
			return res, err
		}
	} else if err := w.Close(res.Lost); err != nil {
		return res, err
	}
	if runErr != nil {
		return res, fmt.Errorf("sampling: %w", runErr)
	}
	return res, nil
}
