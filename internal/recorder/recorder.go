// Package recorder runs a capture into a recording: it starts or finds the
// target, feeds the engine's events to the store, and stops when asked.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/sysinfo"
	"github.com/whyslow/whyslow/internal/target"
	"golang.org/x/sys/unix"
)

// Version is whyslow's version, set by the CLI.
var Version = "dev"

// Config says what to record.
type Config struct {
	Path     string
	Capture  capture.Options
	Command  []string      // run this command as the target
	PID      int           // or follow this running process
	Duration time.Duration // stop after this long (0: until the target exits or ctx ends)
	// Linger keeps recording after the target exits, so that writeback of the
	// data it left dirty is seen: at most this long, and only if it dirtied
	// pages, while anything is still dirty or under writeback.
	Linger time.Duration
	Status io.Writer // a one-line live status, or nil
	// Ready is closed once capture is attached (tests and harnesses wait on it).
	Ready chan<- struct{}
	// Forward delivers signals to the command (run forwards SIGTERM and SIGHUP).
	Forward <-chan os.Signal
}

// Result is what a recording produced.
type Result struct {
	TargetPID  int
	ExitCode   int // the command's, as a shell reports it
	Started    time.Time
	TargetEnd  time.Time // when the target exited (zero if it did not)
	Rows       uint64
	Lost       map[string]uint64
	DirtyAtEnd uint64 // bytes dirty or under writeback system-wide when the target exited
}

// Record captures until the command exits, the pid exits, the duration passes,
// or ctx is done. The recording is complete and closed when it returns.
func Record(ctx context.Context, cfg Config) (*Result, error) {
	opts := cfg.Capture
	opts.SystemWide = len(cfg.Command) == 0 && cfg.PID == 0
	if opts.Level == capture.Full {
		opts.SpoolDir = filepath.Dir(cfg.Path)
	}
	if cfg.PID != 0 {
		if err := target.Exists(cfg.PID); err != nil {
			return nil, err
		}
	}
	// Loading the programs (the verifier) and creating the recording take
	// tens of milliseconds each: do both at once.
	var w *store.Writer
	var werr error
	created := make(chan struct{})
	go func() {
		w, werr = store.Create(cfg.Path)
		close(created)
	}()
	eng, err := capture.Open(opts)
	<-created
	if err != nil {
		if werr == nil {
			w.Close(nil)
			os.Remove(cfg.Path)
		}
		return nil, fmt.Errorf("starting capture: %w", err)
	}
	defer eng.Close()
	if werr != nil {
		return nil, werr
	}
	res := &Result{Started: time.Now(), ExitCode: -1}
	if err := w.SetMeta(startMeta(cfg, eng, res.Started)); err != nil {
		w.Close(nil)
		return nil, err
	}

	var gated *target.Gated
	switch {
	case len(cfg.Command) > 0:
		if gated, err = target.Start(cfg.Command); err != nil {
			w.Close(nil)
			os.Remove(cfg.Path)
			return nil, err
		}
		res.TargetPID = gated.PID()
	case cfg.PID != 0:
		res.TargetPID = cfg.PID
	}
	switch {
	case gated != nil:
		if err := eng.AddTarget(uint32(res.TargetPID)); err != nil {
			w.Close(nil)
			return nil, err
		}
	case res.TargetPID != 0:
		// attach: the process, its threads and its descendants as they are
		// now, with the waits they are already in.
		for _, pid := range append([]int{res.TargetPID}, descendants(res.TargetPID)...) {
			evs, err := eng.AddExisting(uint32(pid))
			if err != nil {
				w.Close(nil)
				return nil, err
			}
			w.Write(evs)
		}
	}

	runCtx, stopCapture := context.WithCancel(context.Background())
	defer stopCapture()
	var runErr error
	var wg sync.WaitGroup
	wg.Add(1)
	sink := w.Write
	var gone *goneFiles
	if !opts.Hooks() {
		gone = newGoneFiles()
		sink = func(batch []event.Event) {
			gone.note(batch)
			w.Write(batch)
		}
	}
	go func() {
		defer wg.Done()
		runErr = eng.Run(runCtx, sink)
	}()
	if cfg.Ready != nil {
		close(cfg.Ready)
	}
	stopStatus := startStatus(cfg, w, eng, res.Started)

	if res.TargetPID != 0 && gated == nil {
		w.SetMeta(map[string]string{"target_start_mono": fmt.Sprint(monoOf(time.Now()))})
	}
	targetDone := make(chan struct{})
	if gated != nil {
		if err := gated.Open(); err != nil {
			stopCapture()
			wg.Wait()
			w.Close(nil)
			return nil, err
		}
		// The command starts when the gate opens: its wait at the gate is
		// whyslow's start-up, not the command's time.
		w.SetMeta(map[string]string{"target_start_mono": fmt.Sprint(monoOf(time.Now()))})
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
	} else if cfg.PID != 0 {
		go func() {
			waitExit(ctx, cfg.PID)
			close(targetDone)
		}()
	}
	// attach: CPU time from /proc at the start, to subtract at the end
	var user0, sys0 time.Duration
	if gated == nil && cfg.PID != 0 {
		user0, sys0, _ = target.ProcCPUTime(cfg.PID)
	}
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		deadline = time.After(cfg.Duration)
	}
	// finish stops capture once: readers drained, lost counters read, programs
	// detached (so nothing is counted lost after the recording ends).
	var finished bool
	finish := func() {
		if finished {
			return
		}
		finished = true
		stopCapture()
		wg.Wait()
		stopStatus()
		if res.Lost, err = eng.Lost(); err != nil {
			res.Lost = map[string]uint64{}
		}
		eng.Close()
	}
	var user, system time.Duration
	select {
	case <-w.Failed():
		// The disk is full (or failing): stop now and keep what was flushed.
		// A command goes on running untraced; whyslow still waits for it.
		finish()
		fmt.Fprintf(os.Stderr, "whyslow: recording stopped: %v\n", w.Err())
	case <-targetDone:
		res.TargetEnd = time.Now()
		res.DirtyAtEnd = dirtyBytes()
		if cfg.Linger > 0 && eng.TargetDirtied() {
			lingerForWriteback(ctx, cfg.Linger)
		}
	case <-deadline:
	case <-ctx.Done():
	}
	if gated != nil {
		select {
		case <-targetDone:
		default:
			// Asked to stop while the command runs: wait for it, as `time` does;
			// the terminal's Ctrl-C reached it too.
			<-targetDone
			res.TargetEnd = time.Now()
		}
		user, system = gated.CPUTime()
	} else if cfg.PID != 0 {
		if u, st, ok := target.ProcCPUTime(cfg.PID); ok {
			user, system = u-user0, st-sys0
		}
	}
	finish()
	if gone != nil {
		w.Write(gone.gone(monoOf(time.Now())))
	}
	res.Rows = w.Rows()
	end := time.Now()
	meta := map[string]string{
		"end_wall":        end.UTC().Format(time.RFC3339Nano),
		"duration_ns":     fmt.Sprint(end.Sub(res.Started).Nanoseconds()),
		"target_pid":      fmt.Sprint(res.TargetPID),
		"exit_code":       fmt.Sprint(res.ExitCode),
		"dirty_at_exit":   fmt.Sprint(res.DirtyAtEnd),
		"target_end_mono": fmt.Sprint(monoOf(res.TargetEnd)),
	}
	if user+system > 0 {
		meta["target_user_ns"] = fmt.Sprint(user.Nanoseconds())
		meta["target_system_ns"] = fmt.Sprint(system.Nanoseconds())
	}
	if werr := w.Err(); werr != nil {
		// The database refuses writes after its error: the end metadata and
		// lost counts cannot be added; what was flushed stays readable.
		w.Close(nil)
		return res, Reported{werr}
	}
	var errs []error
	if err := w.SetMeta(meta); err != nil {
		errs = append(errs, err)
	}
	if err := w.Close(res.Lost); err != nil {
		errs = append(errs, err)
	}
	if runErr != nil {
		errs = append(errs, fmt.Errorf("reading events: %w", runErr))
	}
	return res, errors.Join(errs...)
}

func startMeta(cfg Config, eng *capture.Engine, start time.Time) map[string]string {
	host, _ := os.Hostname()
	var uts unix.Utsname
	unix.Uname(&uts)
	scope := "system"
	command := cfg.Command
	if cfg.PID != 0 && len(command) == 0 {
		command = sysinfo.FS{Root: "/"}.Cmdline(cfg.PID) // attach: name it as ps does
	}
	if len(cfg.Command) > 0 {
		scope = "command"
	} else if cfg.PID != 0 {
		scope = "pid"
	}
	return map[string]string{
		"host":            host,
		"kernel":          unix.ByteSliceToString(uts.Release[:]),
		"arch":            runtime.GOARCH,
		"whyslow_version": Version,
		"start_wall":      start.UTC().Format(time.RFC3339Nano),
		"clock_offset_ns": fmt.Sprint(start.UnixNano() - int64(monoOf(start))),
		"start_mono":      fmt.Sprint(monoOf(start)),
		"level":           cfg.Capture.Level.String(),
		"scope":           scope,
		"command":         strings.Join(command, "\x00"),
		"flavour":         eng.Flavour(),
		"missing":         strings.Join(eng.Missing(), ","),
		"slow_ns":         fmt.Sprint(cfg.Capture.Slow.Nanoseconds()),
		"recording":       absPath(cfg.Path),
		"requests":        fmt.Sprint(cfg.Capture.Requests),
		"payload_bytes":   fmt.Sprint(payloadBytes(cfg.Capture)),
	}
}

// monoOf converts a wall time near now to CLOCK_MONOTONIC ns.
func monoOf(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano() - time.Since(t).Nanoseconds())
}

// descendants lists a running process's descendants, so that attach follows
// children started before it.
func descendants(pid int) []int {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, p := range procs {
		if st, err := p.Stat(); err == nil {
			children[st.PPID] = append(children[st.PPID], p.PID)
		}
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// waitExit returns when pid has exited (or ctx ends): a pidfd becomes readable then.
func waitExit(ctx context.Context, pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	for ctx.Err() == nil {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, 200)
		if n > 0 {
			return
		}
	}
}

// lingerForWriteback waits, up to limit, while data is dirty or under
// writeback: the target's data may still be on its way to the disk. It stops
// as soon as almost nothing is (256 KiB, system-wide).
func lingerForWriteback(ctx context.Context, limit time.Duration) {
	deadline := time.After(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for dirtyBytes() > 256<<10 {
		select {
		case <-deadline:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// dirtyBytes is Dirty + Writeback from /proc/meminfo.
func dirtyBytes() uint64 {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0
	}
	mi, err := fs.Meminfo()
	if err != nil || mi.DirtyBytes == nil || mi.WritebackBytes == nil {
		return 0
	}
	return *mi.DirtyBytes + *mi.WritebackBytes
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Reported is an error whyslow already told the user about when it happened
// (the recording stopped): callers set the exit code and say it no more.
type Reported struct{ Err error }

func (r Reported) Error() string { return r.Err.Error() }
func (r Reported) Unwrap() error { return r.Err }

// payloadBytes is how many first bytes of each request were taken: 0 when
// requests were not captured, or --no-payload.
func payloadBytes(o capture.Options) int {
	if !o.Requests || !o.Payload {
		return 0
	}
	return capture.PayloadLen
}
