package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/procsample"
	"github.com/whyslow/whyslow/internal/sysinfo"
	"github.com/whyslow/whyslow/internal/target"
	"golang.org/x/sys/unix"
)

// captureFlags are shared by run, attach and record.
type captureFlags struct {
	full      bool
	syscalls  bool
	slow      time.Duration
	ring      string
	requests  bool
	noPayload bool
	noPeers   bool
	sampler   string
	hz        int
}

func (c *captureFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&c.syscalls, "syscalls", false, "also hook every syscall: counts, bytes and latency of calls that never wait (aggregated in the kernel; slow ones streamed); costs a syscall-heavy program about a third of its throughput")
	fs.BoolVar(&c.full, "full", false, "stream every I/O syscall (like an LTTng recording)")
	fs.DurationVar(&c.slow, "slow", time.Millisecond, "with --syscalls: stream syscalls at least this slow")
	fs.StringVar(&c.ring, "ring-size", "", "ring buffer for events (a power of two, 4K to 1G; default 4M; the rings of calls of --syscalls and --full share 8M, or this size when given): bigger rides out bursts")
	fs.BoolVar(&c.requests, "requests", false, "capture every socket call of the target, so that 'report requests' can cut its requests")
	fs.BoolVar(&c.noPayload, "no-payload", false, "with --requests: do not take the first bytes of each read on a socket (labels, e.g. the HTTP request line, and message framing)")
	fs.StringVar(&c.sampler, "sampler", samplerAuto, "the capture: bpf (trace with eBPF), proc (sample every thread in /proc, where eBPF cannot load: no root or CAP_BPF, lockdown, an old kernel), or auto: bpf when it can load, else proc, said in one line")
	fs.IntVar(&c.hz, "hz", procsample.DefaultHz, "with the sampled capture: looks at each thread per second")
	fs.BoolVar(&c.noPeers, "no-peers", false, "do not follow the processes outside the target that it waits on (a server, a lock holder): the critical path then stops at them; following them costs every process a little at each context switch (BENCHMARKS.md)")
}

func (c *captureFlags) options() (capture.Options, error) {
	o := capture.Options{Slow: c.slow, Requests: c.requests, Payload: !c.noPayload, NoPeers: c.noPeers}
	if c.full && c.syscalls {
		return o, usageErr("--syscalls and --full: choose one (--full streams every call --syscalls would count)")
	}
	switch {
	case c.full:
		o.Level = capture.Full
	case c.syscalls:
		o.Level = capture.Syscalls
	}
	if c.slow <= 0 {
		return o, usageErr("--slow must be positive")
	}
	if c.ring == "" {
		// The events ring carries a record per wait, not per call, at
		// every level: 4 MiB holds its bursts. The per-call hooks' calls go
		// to a ring per CPU, 8 MiB between them: two fio jobs at --full
		// lost nothing with 2 MiB. The kernel maps a ring's every page
		// into whyslow: at 16 + 16 MiB the rings were a sixth of the
		// recorder's memory (BENCHMARKS.md, 5).
		o.EventsRingBytes = 4 << 20
		if o.Hooks() {
			o.CallsRingBytes = 8 << 20
		}
		return o, nil
	}
	n, err := parseSize(c.ring)
	if err != nil || n < 4096 || n > 1<<30 || n&(n-1) != 0 {
		return o, usageErr("--ring-size must be a power of two from 4K to 1G, got %q", c.ring)
	}
	o.EventsRingBytes = int(n)
	return o, nil
}

// preflight checks what run, attach and record check before capture starts,
// in the order a user fixes them: flags, the capture (privileges for
// --sampler bpf), then the command to run (126 not executable, 127 not
// found) or the process to attach (2).
func (c *captureFlags) preflight(argv []string, pid int) (capture.Options, captureChoice, error) {
	o, err := c.options()
	if err != nil {
		return o, captureChoice{}, err
	}
	ch, err := c.choose()
	if err != nil {
		return o, ch, err
	}
	return o, ch, checkTarget(argv, pid)
}

// checkTarget: the command exists and can run, or the pid is a process.
func checkTarget(argv []string, pid int) error {
	if len(argv) > 0 {
		if _, err := target.Resolve(argv[0]); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return withCode(ExitNotExec, fmt.Errorf("%s: permission denied", argv[0]))
			}
			return withCode(ExitNotFound, fmt.Errorf("%s: command not found", argv[0]))
		}
	}
	if pid != 0 {
		if err := target.Exists(pid); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	return nil
}

// writableDir checks, before a command runs, that an output file (--json,
// --html) can be made where it is asked for: found only at the end, the
// command has run for nothing, and its explanation is lost. "" is none.
func writableDir(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	dir := filepath.Dir(path)
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return usageErr("cannot write %s: %s: %v", path, dir, err)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageErr("cannot write %s: it is a directory", path)
	}
	return nil
}

// needPrivileges explains what is missing before any capture starts.
func needPrivileges() error {
	caps, err := sysinfo.Host.EffectiveCaps("self")
	if err == nil && sysinfo.CanTrace(caps) {
		return nil
	}
	return withCode(ExitNoCapture, fmt.Errorf("capture needs root, or CAP_BPF and CAP_PERFMON (this process has CapEff %016x); run 'whyslow check' for details", caps))
}

// interruptible is a context that ends on SIGINT or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// tempRecording is where run and attach record when -o is not given: in
// /dev/shm when there is one, because tmpfs pages are never written back, so
// whyslow's own recording does not add to the dirty pages it may be diagnosing.
func tempRecording() (string, error) {
	dir := os.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir = "/dev/shm"
	}
	return tempRecordingIn(dir)
}

// tempRecordingIn names a temporary recording in dir after this process,
// whyslow-PID-*.db, and first removes those a dead whyslow left there: a
// run killed with SIGKILL cannot remove its own, and in /dev/shm it holds
// memory until the next boot.
func tempRecordingIn(dir string) (string, error) {
	removeOrphanRecordings(dir)
	f, err := os.CreateTemp(dir, fmt.Sprintf("whyslow-%d-*.db", os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("creating a temporary recording: %w", err)
	}
	name := f.Name()
	f.Close()
	os.Remove(name) // the store creates it; it refuses to overwrite
	return name, nil
}

// removeOrphanRecordings removes the temporary recordings in dir (their
// database, WAL and spill directory) whose whyslow is gone. Only files of
// this user's, named by a pid that no process has now: a pid reused since
// keeps its file, which a later run removes.
func removeOrphanRecordings(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := orphanPID(e.Name())
		if !ok || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// orphanPID reads the pid from a temporary recording's name:
// whyslow-PID-RANDOM.db, with .wal or .tmp after it.
func orphanPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "whyslow-")
	if !ok {
		return 0, false
	}
	digits, rest, ok := strings.Cut(rest, "-")
	if !ok || !(strings.HasSuffix(rest, ".db") || strings.HasSuffix(rest, ".db.wal") || strings.HasSuffix(rest, ".db.tmp")) {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// recordingPath is where run and attach record: the -o file, kept, or a
// temporary one that cleanup removes.
func recordingPath(output string) (path string, cleanup func(), err error) {
	if output != "" {
		return output, func() {}, nil
	}
	if path, err = tempRecording(); err != nil {
		return "", nil, err
	}
	return path, func() { os.Remove(path); os.Remove(path + ".wal"); os.RemoveAll(path + ".tmp") }, nil
}
