// Package recorder runs a capture into a recording: it starts or finds the
// target, feeds the engine's events to the store, and stops when asked.
package recorder

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/whyslow/whyslow/internal/baseline"
	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/sysinfo"
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
	// Announce, if set, is called once capture is attached, before the
	// status line is drawn: the CLI says what it records, and a script
	// waiting on stderr knows that what it starts now is seen.
	Announce func()
	// Forward delivers signals to the command (run forwards SIGTERM and SIGHUP).
	Forward <-chan os.Signal
	// LeaveRunning: the duration or ctx's end finishes the recording while
	// the command still runs (record), instead of waiting for it as time(1)
	// does (run). Result.StillRunning then says so.
	LeaveRunning bool
	// KeepOpen leaves the finished recording open in Result.Recording, for
	// analysis at once (run, attach); the caller closes it. Temporary says
	// the caller removes it after: it is not checkpointed.
	KeepOpen, Temporary bool
	// Created, if set, is called with the recording's database once it is
	// created, while the programs load: run readies its explanation's
	// connection there, off the path of the answer.
	Created func(*sql.DB)
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
	// HeldMost is the most the capture held back, in bytes, while the
	// target kept every CPU busy (--full: capture.Engine.HeldMost).
	HeldMost int64
	// StillRunning: the recording ended before the command (LeaveRunning).
	StillRunning bool
	// Recording is the finished recording, still open (Config.KeepOpen), or nil.
	Recording *store.Recording
}

// Record captures until the command exits, the pid exits, the duration passes,
// or ctx is done. The recording is complete and closed when it returns.
//
// One clean-up rule: until the target has run under capture (the command's
// gate opened, or the pid followed), an error removes the half-made
// recording, which holds nothing of the target; from then on, what was
// recorded is kept, closed, and the error returned beside it.
func Record(ctx context.Context, cfg Config) (*Result, error) {
	s, err := open(cfg)
	if err != nil {
		return nil, err
	}
	defer s.eng.Close()
	if err := s.startTarget(); err != nil {
		return nil, s.abandon(err)
	}
	s.startCapture()
	if err := s.openGate(ctx); err != nil {
		s.stopCapture()
		return nil, s.abandon(err)
	}
	user, system := s.wait(ctx)
	s.stopCapture()
	return s.close(user, system)
}

// startMeta is the metadata known at the start; flavour and missing are
// the BPF capture's (empty for the sampled one).
func startMeta(cfg Config, flavour, missing string, start time.Time) map[string]string {
	host, _ := os.Hostname()
	var uts unix.Utsname
	unix.Uname(&uts)
	scope := "system"
	command := cfg.Command
	if cfg.PID != 0 && len(command) == 0 {
		command = sysinfo.Host.Cmdline(cfg.PID) // attach: name it as ps does
	}
	// Names are text, as in the tables (event.EncodeText): raw, a command
	// line that is not UTF-8 failed the whole recording.
	words := make([]string, len(command))
	for i, a := range command {
		words[i] = event.EncodeText(a)
	}
	if len(cfg.Command) > 0 {
		scope = "command"
	} else if cfg.PID != 0 {
		scope = "pid"
	}
	m := map[string]string{
		"host":            event.EncodeText(host),
		"kernel":          unix.ByteSliceToString(uts.Release[:]),
		"arch":            runtime.GOARCH,
		"whyslow_version": Version,
		"start_wall":      start.UTC().Format(time.RFC3339Nano),
		"clock_offset_ns": fmt.Sprint(start.UnixNano() - int64(monoOf(start))),
		"start_mono":      fmt.Sprint(monoOf(start)),
		"level":           cfg.Capture.Level.String(),
		"scope":           scope,
		"command":         strings.Join(words, "\x00"),
		"flavour":         flavour,
		"missing":         missing,
		"capture":         CaptureBPF,
		"slow_ns":         fmt.Sprint(cfg.Capture.Slow.Nanoseconds()),
		"recording":       event.EncodeText(absPath(cfg.Path)),
		// whyslow's own activity (its reads of kallsyms, its recording) is
		// never a cause of the target's: the analyses count it apart.
		"whyslow_pid": fmt.Sprint(os.Getpid()),
		"requests":    fmt.Sprint(cfg.Capture.Requests),
		"arrivals":    event.ArrivalsPerConnection,
	}
	maps.Copy(m, event.PayloadMeta(cfg.Capture.Kept()))
	// What `whyslow baseline` measured of this machine's devices goes with
	// the recording: it is explained against them wherever it is read.
	// Unreadable baselines leave them out; the explanation then says none.
	if path, err := baseline.File(); err == nil {
		if kept, err := baseline.Load(path); err == nil {
			maps.Copy(m, baseline.Meta(sysinfo.Host.BlockDevices(), kept))
		}
	}
	return m
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
	for sysinfo.Host.DirtyBytes() > 256<<10 {
		select {
		case <-deadline:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
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

// StartError is a capture the kernel would not start (a program refused,
// a map not made): nothing of the target ran, and the recording is gone.
// run, attach and record under --sampler auto sample /proc instead.
type StartError struct{ Err error }

func (e StartError) Error() string { return e.Err.Error() }
func (e StartError) Unwrap() error { return e.Err }
