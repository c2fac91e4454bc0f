package recorder

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/sysinfo"
	"github.com/whyslow/whyslow/internal/target"
)

// session is one recording in progress: its store, its engine, its target,
// in the order Record drives them.
type session struct {
	cfg   Config
	opts  capture.Options
	w     *store.Writer
	eng   *capture.Engine
	gated *target.Gated // the command run, or nil (attach, system-wide)
	res   *Result

	gone       *goneFiles // default level: files to check at the end
	stop       context.CancelFunc
	reading    sync.WaitGroup
	runErr     error
	stopStatus func()
	targetDone chan struct{}
	stopped    bool
	self       int   // whyslow's own pid: no snapshot of its I/O
	startErr   error // starting the command, from open
	// meta is closed once the start's metadata is written (metaErr).
	meta    chan struct{}
	metaErr error
	// listening: the attached processes that held a listening socket when
	// capture began (meta listening_pids).
	listening []int
}

// open loads the capture engine and creates the recording. The recording
// is created, and the command started behind its gate (its shell's start
// is whyslow's start-up too), while the kernel verifies the programs: the
// verifier keeps one CPU busy for most of the start, and DuckDB's create
// beside the object's parse and the kernel's types had delayed both. On
// error nothing is left behind.
func open(cfg Config) (*session, error) {
	s := &session{cfg: cfg, opts: cfg.Capture, targetDone: make(chan struct{}), self: os.Getpid()}
	s.opts.SystemWide = len(cfg.Command) == 0 && cfg.PID == 0
	if s.opts.Level == capture.Full {
		s.opts.SpoolDir = filepath.Dir(cfg.Path)
	}
	if cfg.PID != 0 {
		if err := target.Exists(cfg.PID); err != nil {
			return nil, err
		}
	}
	prepared, err := capture.Prepare(s.opts)
	if err != nil {
		return nil, StartError{fmt.Errorf("starting capture: %w", err)}
	}
	var werr error
	created := make(chan struct{})
	go func() {
		s.w, werr = store.Create(cfg.Path)
		if werr == nil && cfg.Temporary {
			s.w.CommitEvery(store.TemporaryCommitEvery)
		}
		if werr == nil && cfg.Created != nil {
			cfg.Created(s.w.DB())
		}
		close(created)
	}()
	gated := make(chan struct{})
	go func() {
		if len(cfg.Command) > 0 {
			s.gated, s.startErr = target.Start(cfg.Command)
		}
		close(gated)
	}()
	eng, err := prepared.Load()
	<-created
	<-gated
	if err != nil || werr != nil {
		s.killGated()
	}
	if err != nil {
		if werr == nil {
			s.w.Close(nil)
			os.Remove(cfg.Path)
		}
		return nil, StartError{fmt.Errorf("starting capture: %w", err)}
	}
	if werr != nil {
		eng.Close()
		return nil, werr
	}
	s.eng = eng
	s.res = &Result{Started: time.Now(), ExitCode: -1}
	// The start's metadata is written while the target joins the capture:
	// openGate waits for it, so it is in the file before the target runs.
	s.meta = make(chan struct{})
	go func() {
		s.metaErr = s.w.SetMeta(startMeta(cfg, eng.Flavour(), strings.Join(eng.Missing(), ","), s.res.Started))
		close(s.meta)
	}()
	return s, nil
}

// abandon closes and removes a recording the target never ran in, and
// kills a command still held at its gate.
func (s *session) abandon(err error) error {
	s.killGated()
	<-s.meta
	s.w.Close(nil)
	os.Remove(s.cfg.Path)
	os.Remove(s.cfg.Path + ".wal")
	return err
}

// killGated kills a command still held at its gate.
func (s *session) killGated() {
	if s.gated != nil {
		s.gated.Cmd.Process.Kill()
		s.gated.Wait()
	}
}

// startTarget puts the command started behind its gate, or the pid, its
// threads and the descendants it already has (with the waits they are in),
// in the target set.
func (s *session) startTarget() error {
	switch {
	case len(s.cfg.Command) > 0:
		if s.startErr != nil {
			return s.startErr
		}
		s.res.TargetPID = s.gated.PID()
		return s.eng.AddTarget(uint32(s.gated.PID()))
	case s.cfg.PID != 0:
		s.res.TargetPID = s.cfg.PID
		pids := append([]int{s.cfg.PID}, sysinfo.Host.Descendants(s.cfg.PID)...)
		// A server waits for work; no call of its may show it within the
		// window (nginx accepts without waiting), its listening socket does.
		s.listening = sysinfo.Host.Listeners(pids)
		for _, pid := range pids {
			evs, err := s.eng.AddExisting(uint32(pid))
			if err != nil {
				return err
			}
			s.w.Write(evs)
		}
	}
	s.w.Write(s.ioSnapshot(event.IOAtStart))
	return nil
}

// startCapture feeds the engine's events to the store until stopCapture.
func (s *session) startCapture() {
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	sink := s.w.Write
	if !s.opts.Hooks() {
		s.gone = newGoneFiles()
		sink = func(batch []event.Event) {
			s.gone.note(batch)
			s.w.Write(batch)
		}
	}
	s.reading.Add(1)
	go func() {
		defer s.reading.Done()
		s.runErr = s.eng.Run(ctx, sink)
	}()
	if s.cfg.Ready != nil {
		close(s.cfg.Ready)
	}
	if s.cfg.Announce != nil {
		s.cfg.Announce()
	}
	s.stopStatus = startStatus(s.cfg, s.w, s.eng, s.res.Started)
}

// openGate lets the command run (its time starts now: its wait at the gate
// is whyslow's start-up), or, attached, starts watching the pid.
func (s *session) openGate(ctx context.Context) error {
	<-s.meta
	if s.metaErr != nil {
		return s.metaErr
	}
	if s.gated == nil {
		if s.res.TargetPID != 0 {
			s.w.SetMeta(map[string]string{"target_start_mono": fmt.Sprint(monoOf(time.Now()))})
			go func() {
				waitExit(ctx, s.cfg.PID)
				close(s.targetDone)
			}()
		}
		return nil
	}
	if err := s.eng.Released(uint32(s.gated.PID())); err != nil {
		return err
	}
	if err := s.gated.Open(); err != nil {
		return err
	}
	s.w.SetMeta(map[string]string{"target_start_mono": fmt.Sprint(monoOf(time.Now()))})
	go func() {
		s.res.ExitCode, _ = s.gated.Wait()
		close(s.targetDone)
	}()
	go func() {
		for {
			select {
			case sig := <-s.cfg.Forward:
				s.gated.Cmd.Process.Signal(sig)
			case <-s.targetDone:
				return
			}
		}
	}()
	return nil
}

// wait returns when the target has exited (and its writeback was waited
// for), the duration passed, ctx ended, or the store failed; a command is
// always waited for, as time(1) does. It returns the target's CPU time.
func (s *session) wait(ctx context.Context) (user, system time.Duration) {
	var user0, sys0 time.Duration
	if s.gated == nil && s.cfg.PID != 0 {
		user0, sys0, _ = target.ProcCPUTime(s.cfg.PID) // attach: subtract at the end
	}
	var deadline <-chan time.Time
	if s.cfg.Duration > 0 {
		deadline = time.After(s.cfg.Duration)
	}
	select {
	case <-s.w.Failed():
		// The disk is full (or failing): stop now and keep what was flushed.
		// A command goes on running untraced; whyslow still waits for it.
		s.stopCapture()
		fmt.Fprintf(os.Stderr, "whyslow: recording stopped: %v\n", s.w.Err())
	case <-s.targetDone:
		s.res.TargetEnd = time.Now()
		s.res.DirtyAtEnd = sysinfo.Host.DirtyBytes()
		if s.cfg.Linger > 0 && s.eng.TargetDirtied() {
			lingerForWriteback(ctx, s.cfg.Linger)
		}
	case <-deadline:
	case <-ctx.Done():
	}
	switch {
	case s.gated != nil:
		select {
		case <-s.targetDone:
		default:
			if s.cfg.LeaveRunning {
				s.res.StillRunning = true
				return 0, 0
			}
			// Asked to stop while the command runs: wait for it, as `time` does;
			// the terminal's Ctrl-C reached it too.
			<-s.targetDone
			s.res.TargetEnd = time.Now()
		}
		return s.gated.CPUTime()
	case s.cfg.PID != 0:
		if u, st, ok := target.ProcCPUTime(s.cfg.PID); ok {
			return u - user0, st - sys0
		}
	}
	return 0, 0
}

// stopCapture stops once: readers drained, lost counters read, programs
// detached (so nothing is counted lost after the recording ends).
func (s *session) stopCapture() {
	if s.stopped {
		return
	}
	s.stopped = true
	// Before the programs stop: a thread's exit or this, never neither. A
	// target that has exited left each thread's last reading at its exit,
	// and the descendants it left behind are orphans, no longer found
	// under it: the snapshot, a walk of every process in /proc (~2 ms of
	// every run's end), would find nothing.
	if !s.targetExited() {
		s.w.Write(s.ioSnapshot(event.IOAtEnd))
	}
	s.w.Write(openConnections())
	s.stop()
	s.reading.Wait()
	s.res.HeldMost = s.eng.HeldMost()
	s.stopStatus()
	var err error
	if s.res.Lost, err = s.eng.Lost(); err != nil {
		s.res.Lost = map[string]uint64{}
	}
	s.eng.Close()
}

// targetExited says whether the command or pid followed has exited.
func (s *session) targetExited() bool {
	select {
	case <-s.targetDone:
		return true
	default:
		return false
	}
}

// close writes what only the end knows (files gone, times, exit, CPU) and
// closes the recording.
func (s *session) close(user, system time.Duration) (*Result, error) {
	if s.gone != nil {
		s.w.Write(s.gone.gone(monoOf(time.Now())))
	}
	s.res.Rows = s.w.Rows()
	end := time.Now()
	meta := map[string]string{
		"end_wall":        end.UTC().Format(time.RFC3339Nano),
		"duration_ns":     fmt.Sprint(end.Sub(s.res.Started).Nanoseconds()),
		"target_pid":      fmt.Sprint(s.res.TargetPID),
		"exit_code":       fmt.Sprint(s.res.ExitCode),
		"dirty_at_exit":   fmt.Sprint(s.res.DirtyAtEnd),
		"target_end_mono": fmt.Sprint(monoOf(s.res.TargetEnd)),
	}
	if len(s.listening) > 0 {
		meta["listening_pids"] = strings.Trim(fmt.Sprint(s.listening), "[]")
	}
	if user+system > 0 {
		meta["target_user_ns"] = fmt.Sprint(user.Nanoseconds())
		meta["target_system_ns"] = fmt.Sprint(system.Nanoseconds())
	}
	if werr := s.w.Err(); werr != nil {
		// The database refuses writes after its error: the end metadata and
		// lost counts cannot be added; what was flushed stays readable.
		s.w.Close(nil)
		return s.res, Reported{werr}
	}
	var errs []error
	if err := s.w.SetMeta(meta); err != nil {
		errs = append(errs, err)
	}
	if s.cfg.KeepOpen {
		rec, err := s.w.Finish(s.res.Lost, s.cfg.Temporary)
		if err != nil {
			errs = append(errs, err)
		}
		s.res.Recording = rec
	} else if err := s.w.Close(s.res.Lost); err != nil {
		errs = append(errs, err)
	}
	if s.runErr != nil {
		errs = append(errs, fmt.Errorf("reading events: %w", s.runErr))
	}
	return s.res, errors.Join(errs...)
}
