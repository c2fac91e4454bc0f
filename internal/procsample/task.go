package procsample

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

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
	stat                  *os.File
	schedstat             *os.File
	syscall, wchan, stack *os.File
	last                  schedstat
	looked                bool // last is a reading (the first look has nothing to grow from)
	lastLook              uint64
	// prev is the facts of the last look that read them, and look that
	// look: a thread that has not run since (schedstat unchanged) is in the
	// same wait, and its next look is a copy of it (Sampler.again).
	prev facts
	look *event.ProcSample
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
}

var (
	errGone   = errors.New("task gone")
	errExited = errors.New("task exited, not yet reaped")
)

func openTask(root string, pid, tid int) (*task, error) {
	dir := filepath.Join(root, "proc", strconv.Itoa(pid), "task", strconv.Itoa(tid))
	st, err := os.Open(filepath.Join(dir, "stat"))
	if err != nil {
		return nil, errGone
	}
	ss, err := os.Open(filepath.Join(dir, "schedstat"))
	if err != nil {
		st.Close()
		return nil, errGone
	}
	return &task{pid: pid, tid: tid, dir: dir, stat: st, schedstat: ss}, nil
}

func (t *task) close() {
	for _, f := range []*os.File{t.stat, t.schedstat, t.syscall, t.wchan, t.stack} {
		if f != nil {
			f.Close()
		}
	}
}

// reread reads an open /proc file again from its start.
func reread(f *os.File, buf []byte) ([]byte, error) {
	n, err := unix.Pread(int(f.Fd()), buf, 0)
	if err != nil {
		return nil, errGone
	}
	if n == 0 {
		return nil, errGone // an exited thread's stat reads empty
	}
	return buf[:n], nil
}

// readFile reads one of the thread's files opened when first needed
// (syscall, wchan, stack), kept open in *f. Its error is the open's or the
// read's as the kernel gave it: the stack's says permission denied.
func (t *task) readFile(f **os.File, name string, buf []byte) ([]byte, error) {
	if *f == nil {
		o, err := os.Open(filepath.Join(t.dir, name))
		if err != nil {
			return nil, err
		}
		*f = o
	}
	n, err := unix.Pread(int((*f).Fd()), buf, 0)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: filepath.Join(t.dir, name), Err: err}
	}
	return buf[:n], nil
}
