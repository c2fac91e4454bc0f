package procsample

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"github.com/whyslow/whyslow/internal/event"
	"golang.org/x/sys/unix"
)

// task is one thread followed from tick to tick. Its files stay open and
// are read again with pread: at 1,000 threads and 20 Hz, a path walk
// through /proc per file and look, and its close, were most of the
// sampler's cost (BENCHMARKS.md section 10). stat and schedstat are opened
// with the task; syscall, wchan and stack when its first wait needs them
// (a thread that never waits anew needs none). A file opened on a thread
// that exits reads ESRCH, and a reused tid is a new directory: an open
// file never reads another thread.
type task struct {
	pid, tid              int
	dir                   string
	stat                  procFile
	schedstat             procFile
	syscall, wchan, stack procFile
	// cgroup is its cgroup file, opened when a look first needs it;
	// cgText its text at the last reading, groups what that named.
	cgroup   procFile
	cgText   string
	groups   *groups
	last     schedstat
	looked   bool // last is a reading (the first look has nothing to grow from)
	lastLook uint64
	// prev is the facts of the last look that read them, and look that
	// look: a thread that has not run since (schedstat unchanged) is in the
	// same wait, and its next look is a copy of it (Sampler.again).
	prev facts
	look *event.ProcSample
	// held is the looks since that found it had not run, as one (hold).
	held *event.ProcSample
	comm string
	// idle counts the looks in a row that found it had not run; gap is
	// the ticks between its looks now, due the tick of its next
	// (Sampler.backOff).
	idle     int
	gap, due uint64
}

// facts is what a look at a waiting thread read beyond its state.
type facts struct {
	state   byte
	syscall int32
	fd      int32
	wchan   string
	stack   []string
	// timeoutAt: the earliest its call's timeout could end the wait,
	// CLOCK_MONOTONIC ns; 0 none, or not known (timeoutOf).
	timeoutAt uint64
}

var (
	errGone   = errors.New("task gone")
	errExited = errors.New("task exited, not yet reaped")
)

func openTask(root string, pid, tid int) (*task, error) {
	dir := filepath.Join(root, "proc", strconv.Itoa(pid), "task", strconv.Itoa(tid))
	st, err := openProcFile(filepath.Join(dir, "stat"))
	if err != nil {
		return nil, errGone
	}
	ss, err := openProcFile(filepath.Join(dir, "schedstat"))
	if err != nil {
		st.close()
		return nil, errGone
	}
	return &task{pid: pid, tid: tid, dir: dir, stat: st, schedstat: ss}, nil
}

func (t *task) close() {
	for _, f := range []procFile{t.stat, t.schedstat, t.syscall, t.wchan, t.stack, t.cgroup} {
		f.close()
	}
}

// procFile is a file of /proc kept open and read again from its start
// (its fd + 1; 0: not open). Not an os.File: its reads are raw syscalls
// (pread), which Go's scheduler does not see. /proc's files are made as
// they are read, in memory, and do not block; a syscall the scheduler
// sees makes its monitor (sysmon) take the processor from the thread in
// it and poll every 20 µs again: at 1,000 reads a tick it woke ~300 times
// a second, a third of the sampler's cost (BENCHMARKS.md section 10).
type procFile int

func openProcFile(path string) (procFile, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return procFile(fd + 1), nil
}

func (f procFile) close() {
	if f != 0 {
		unix.Close(int(f) - 1)
	}
}

// pread reads the file from its start into buf.
func (f procFile) pread(buf []byte) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(f-1), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// fstat is fstat(2) of the file, raw as pread.
func (f procFile) fstat(st *unix.Stat_t) error {
	_, _, errno := unix.RawSyscall(unix.SYS_FSTAT, uintptr(f-1), uintptr(unsafe.Pointer(st)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// reread reads an open /proc file again from its start.
func reread(f procFile, buf []byte) ([]byte, error) {
	n, err := f.pread(buf)
	if err != nil {
		return nil, errGone
	}
	if n == 0 {
		return nil, errGone // an exited thread's stat reads empty
	}
	return buf[:n], nil
}

// readFile reads one of the thread's files opened when first needed
// (syscall, wchan, stack, cgroup), kept open in *f. Its error is the
// open's or the read's as the kernel gave it: the stack's says permission
// denied.
func (t *task) readFile(f *procFile, name string, buf []byte) ([]byte, error) {
	if *f == 0 {
		o, err := openProcFile(filepath.Join(t.dir, name))
		if err != nil {
			return nil, err
		}
		*f = o
	}
	n, err := f.pread(buf)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: filepath.Join(t.dir, name), Err: err}
	}
	return buf[:n], nil
}
