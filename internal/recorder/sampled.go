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
	abandon := func(err error) (*Result, error) {
		w.Close(nil)
		os.Remove(cfg.Path)
		os.Remove(cfg.Path + ".wal")
		return nil, err
	}
	res := &Result{Started: time.Now(), ExitCode: -1, Lost: map[string]uint64{}}
	var gated *target.Gated
	if len(cfg.Command) > 0 {
		if gated, err = target.Start(cfg.Command); err != nil {
			return abandon(err)
		}
		res.TargetPID = gated.PID()
	} else {
		res.TargetPID = cfg.PID
	}
	if hz <= 0 {
		hz = procsample.DefaultHz
	}
	sampler, err := procsample.New(procsample.Options{PID: res.TargetPID, Hz: hz,
		Notify: func(line string) { fmt.Fprintln(os.Stderr, "whyslow: "+line) }})
	if err != nil {
		if gated != nil {
			gated.Cmd.Process.Kill()
			gated.Wait()
		}
		return abandon(err)
	}
	meta := startMeta(cfg, "", "", res.Started)
	meta["capture"] = CaptureSampled
	meta["hz"] = fmt.Sprint(hz)
	meta["level"] = "sampled"
	if err := w.SetMeta(meta); err != nil {
		if gated != nil {
			gated.Cmd.Process.Kill()
			gated.Wait()
		}
		return abandon(err)
	}

	targetDone := make(chan struct{})
	w.SetMeta(map[string]string{"target_start_mono": fmt.Sprint(monoOf(time.Now()))})
	if gated != nil {
		if err := gated.Open(); err != nil {
			gated.Cmd.Process.Kill()
			gated.Wait()
			return abandon(err)
		}
		go func() {
			res.ExitCode, _ = gated.Wait()
			close(targetDone)
		}()
		go func() {
			for {
				select {
				case sig := <-cfg.Forward:
					gated.Cmd.Process.Signal(sig)
				case <-targetDone:
					return
				}
			}
		}()
	} else {
		go func() {
			waitExit(ctx, cfg.PID)
			close(targetDone)
		}()
	}
	var user0, sys0 time.Duration
	if gated == nil {
		user0, sys0, _ = target.ProcCPUTime(cfg.PID)
	}
	sctx, stop := context.WithCancel(context.Background())
	sampled := make(chan error, 1)
	go func() { sampled <- sampler.Run(sctx, w.Write) }()
	if cfg.Ready != nil {
		close(cfg.Ready)
	}
	if cfg.Announce != nil {
		cfg.Announce()
	}
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		deadline = time.After(cfg.Duration)
	}
	select {
	case <-targetDone:
		res.TargetEnd = time.Now()
	case <-deadline:
	case <-ctx.Done():
	case <-w.Failed():
		fmt.Fprintf(os.Stderr, "whyslow: recording stopped: %v\n", w.Err())
	}
	stop()
	runErr := <-sampled
	var user, system time.Duration
	if gated != nil {
		select {
		case <-targetDone:
		default:
			if cfg.LeaveRunning {
				res.StillRunning = true
			} else {
				<-targetDone // as time(1) does; Ctrl-C reached the command too
				res.TargetEnd = time.Now()
			}
		}
		if !res.StillRunning {
			user, system = gated.CPUTime()
		}
	} else if u, s, ok := target.ProcCPUTime(cfg.PID); ok {
		user, system = u-user0, s-sys0
	}
	st := sampler.Stats()
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
	if cfg.KeepOpen {
		rec, err := w.Finish(res.Lost, cfg.Temporary)
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
