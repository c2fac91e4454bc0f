package sysinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// Thread is a thread as /proc shows it at one moment: what attach knows of a
// wait that began before capture.
type Thread struct {
	PID, TID uint32
	PPID     uint32
	Comm     string
	State    byte     // 'R', 'S', 'D', ...
	Syscall  int32    // in progress, -1 none or running
	Args     []uint64 // the syscall's arguments
	Frames   []string // kernel stack, innermost first (root only)
	// File is the file of the syscall's first argument when it is an fd.
	File *OpenFile
}

// OpenFile is one of a process's open files, named as the kernel names it.
type OpenFile struct {
	FD   int32
	Path string
	Dev  uint32 // kernel dev_t
	Ino  uint64
	Mode uint32
}

// Threads lists a process's threads with their state, syscall and stack.
func (fs FS) Threads(pid int) ([]Thread, error) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return nil, err
	}
	proc, err := pfs.Proc(pid)
	if err != nil {
		return nil, err
	}
	pst, err := proc.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading process %d: %w", pid, err)
	}
	tasks, err := pfs.AllThreads(pid)
	if err != nil {
		return nil, err
	}
	var out []Thread
	for _, task := range tasks {
		st, err := task.Stat()
		if err != nil {
			continue // gone meanwhile
		}
		t := Thread{PID: uint32(pid), TID: uint32(task.PID), PPID: uint32(pst.PPID), Comm: st.Comm, Syscall: -1}
		if st.State != "" {
			t.State = st.State[0]
		}
		dir := fs.path(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(task.PID)))
		if b, err := os.ReadFile(filepath.Join(dir, "syscall")); err == nil {
			t.Syscall, t.Args = parseSyscall(b)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "stack")); err == nil {
			t.Frames = parseStack(b)
		}
		if t.Syscall >= 0 && len(t.Args) > 0 && fdArg[t.Syscall] {
			t.File = fs.openFile(pid, int32(t.Args[0]))
		}
		out = append(out, t)
	}
	return out, nil
}

// fdArg: syscalls whose first argument is the file they wait on (read and
// write families, fsync family, sockets, poll-free waits on one fd, flock).
var fdArg = map[int32]bool{0: true, 1: true, 17: true, 18: true, 19: true, 20: true, 295: true, 296: true,
	327: true, 328: true, 74: true, 75: true, 277: true, 43: true, 288: true, 44: true, 45: true, 46: true,
	47: true, 73: true, 72: true, 40: true, 275: true, 276: true, 285: true}

func (fs FS) openFile(pid int, fd int32) *OpenFile {
	link := fs.path(filepath.Join("/proc", strconv.Itoa(pid), "fd", strconv.Itoa(int(fd))))
	path, err := os.Readlink(link)
	if err != nil {
		return nil
	}
	f := &OpenFile{FD: fd, Path: path}
	var st unix.Stat_t
	if unix.Stat(link, &st) == nil {
		f.Dev, f.Ino, f.Mode = KernelDev(st.Dev), st.Ino, st.Mode
	}
	return f
}

// parseSyscall reads /proc/PID/task/TID/syscall: "NR ARG1 ... SP PC" while
// inside a syscall, "-1 SP PC" outside one, "running" on a CPU.
func parseSyscall(b []byte) (int32, []uint64) {
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return -1, nil
	}
	nr, err := strconv.ParseInt(fields[0], 10, 32)
	if err != nil || nr < 0 {
		return -1, nil
	}
	var args []uint64
	for _, f := range fields[1:min(len(fields), 7)] {
		v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
		if err != nil {
			break
		}
		args = append(args, v)
	}
	return int32(nr), args
}

// parseStack reads /proc/PID/task/TID/stack: "[<0>] folio_wait_bit+0x13c/0x350".
func parseStack(b []byte) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		_, fn, ok := strings.Cut(strings.TrimSpace(line), "] ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(fn, '+'); i > 0 {
			fn = fn[:i]
		}
		out = append(out, fn)
	}
	return out
}

// Cmdline is a process's argument list, empty when it is gone or a kernel thread.
func (fs FS) Cmdline(pid int) []string {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return nil
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return nil
	}
	args, _ := p.CmdLine()
	return args
}

// ThreadRunTime is a thread's time on a CPU so far, ns (schedstat's first
// field: the scheduler's own account, exact whatever whyslow saw).
func (fs FS) ThreadRunTime(pid, tid int) (uint64, error) {
	b, err := os.ReadFile(fs.path(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(tid), "schedstat")))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("thread %d: empty schedstat", tid)
	}
	return strconv.ParseUint(f[0], 10, 64)
}
