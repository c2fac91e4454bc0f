package procsample

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// task is one thread followed from tick to tick. Its stat and schedstat
// stay open and are read again with pread: at 1,000 threads and 20 Hz, a
// path walk through /proc per file and tick was most of the sampler's cost
// (BENCHMARKS.md). A file opened on a thread that exits reads ESRCH, and a
// reused tid is a new directory: an open file never reads another thread.
type task struct {
	pid, tid  int
	dir       string
	stat      *os.File
	schedstat *os.File
	last      schedstat
	looked    bool // last is a reading (the first look has nothing to grow from)
	lastLook  uint64
	// prev is the previous look's facts: a thread that has not run since
	// (schedstat's run count unchanged) is in the same wait, and its
	// syscall, file and wait channel are not read again.
	prev facts
}

// facts is what a look at a waiting thread read beyond its state.
type facts struct {
	state   byte
	syscall int32
	fd      int32
	args    bool
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
	t.stat.Close()
	t.schedstat.Close()
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

// readFile reads one of the thread's files that a tick opens only when it
// needs it (syscall, wchan, stack: a running thread needs none).
func (t *task) readFile(name string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(filepath.Join(t.dir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
