package event

import (
	"slices"
	"strings"
)

// Class groups syscalls the way the analyses report them. CLS_* in
// bpf/syscalls.h are generated from these (make generate).
type Class uint8

const (
	ClassNone Class = iota
	ClassRead
	ClassWrite
	ClassOpen
	ClassClose
	ClassSync
	ClassNet
	ClassMmap
	ClassLock
	ClassUring
	ClassXfer
	ClassUnlink
)

var classNames = [...]string{"none", "read", "write", "open", "close", "sync", "net", "mmap", "lock", "uring", "xfer", "unlink"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "none"
}

// MovesBytes reports whether calls of the class may return the bytes they
// moved; SyscallMovesBytes says which of them do.
func (c Class) MovesBytes() bool {
	return c == ClassRead || c == ClassWrite || c == ClassNet || c == ClassXfer
}

// connects are the net calls that make a connection and move no bytes:
// accept and accept4 return a new fd, connect 0.
var connects = map[string]bool{"accept": true, "accept4": true, "connect": true}

// SyscallMovesBytes reports whether the traced syscall named name returns,
// when positive, the bytes it moved: a call of a class that moves bytes, but
// not one that makes a connection. Every byte count of syscalls (the io view,
// the analyses, syscall_totals) comes from these calls only.
func SyscallMovesBytes(name string) bool { return byteSyscalls[name] }

var byteSyscalls = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range syscalls {
		if s.class.MovesBytes() && !connects[s.name] {
			m[s.name] = true
		}
	}
	return m
}()

// ByteSyscallsSQL is the SQL list of the syscalls that move bytes, by name
// (SyscallMovesBytes), for `name IN (...)`: our own fixed words, never input.
func ByteSyscallsSQL() string {
	var q []string
	for name := range byteSyscalls {
		q = append(q, "'"+name+"'")
	}
	slices.Sort(q)
	return strings.Join(q, ",")
}

// ClassByName is the inverse of String.
func ClassByName(name string) (Class, bool) {
	for i, n := range classNames {
		if n == name && i != 0 {
			return Class(i), true
		}
	}
	return ClassNone, false
}

type syscallInfo struct {
	name  string
	class Class
}

// x86_64 numbers; bpf/syscalls.h is generated from this table (make generate).
var syscalls = map[uint32]syscallInfo{
	0: {"read", ClassRead}, 17: {"pread64", ClassRead}, 19: {"readv", ClassRead},
	295: {"preadv", ClassRead}, 327: {"preadv2", ClassRead},
	1: {"write", ClassWrite}, 18: {"pwrite64", ClassWrite}, 20: {"writev", ClassWrite},
	296: {"pwritev", ClassWrite}, 328: {"pwritev2", ClassWrite},
	77: {"ftruncate", ClassWrite}, 285: {"fallocate", ClassWrite},
	2: {"open", ClassOpen}, 257: {"openat", ClassOpen}, 437: {"openat2", ClassOpen}, 85: {"creat", ClassOpen},
	3:  {"close", ClassClose},
	74: {"fsync", ClassSync}, 75: {"fdatasync", ClassSync}, 162: {"sync", ClassSync},
	306: {"syncfs", ClassSync}, 277: {"sync_file_range", ClassSync}, 26: {"msync", ClassSync},
	42: {"connect", ClassNet}, 43: {"accept", ClassNet}, 288: {"accept4", ClassNet},
	44: {"sendto", ClassNet}, 45: {"recvfrom", ClassNet}, 46: {"sendmsg", ClassNet}, 47: {"recvmsg", ClassNet},
	9:  {"mmap", ClassMmap},
	73: {"flock", ClassLock}, 72: {"fcntl", ClassLock},
	426: {"io_uring_enter", ClassUring},
	87:  {"unlink", ClassUnlink}, 263: {"unlinkat", ClassUnlink}, 84: {"rmdir", ClassUnlink},
	40: {"sendfile", ClassXfer}, 275: {"splice", ClassXfer}, 326: {"copy_file_range", ClassXfer},
}

// TracedSyscall is a syscall the kernel side follows: its x86_64 number, name and class.
type TracedSyscall struct {
	Nr    uint32
	Name  string
	Class Class
}

// TracedSyscalls lists the syscalls the kernel side follows, by number: the
// one definition bpf/syscalls.h is generated from (internal/capture/gensyscalls).
func TracedSyscalls() []TracedSyscall {
	out := make([]TracedSyscall, 0, len(syscalls))
	for nr, s := range syscalls {
		out = append(out, TracedSyscall{nr, s.name, s.class})
	}
	slices.SortFunc(out, func(a, b TracedSyscall) int { return int(a.Nr) - int(b.Nr) })
	return out
}

// Classes lists every class, ClassNone first, in number order.
func Classes() []Class {
	out := make([]Class, len(classNames))
	for i := range classNames {
		out[i] = Class(i)
	}
	return out
}

// Other syscalls the classifier needs to recognise while a thread waits.
var waitSyscalls = map[int32]string{
	7: "poll", 23: "select", 232: "epoll_wait", 281: "epoll_pwait", 441: "epoll_pwait2",
	271: "ppoll", 270: "pselect6", 202: "futex", 35: "nanosleep", 230: "clock_nanosleep",
	61: "wait4", 247: "waitid", 34: "pause", 130: "rt_sigsuspend", 128: "rt_sigtimedwait",
	4: "stat", 5: "fstat", 6: "lstat", 8: "lseek", 10: "mprotect", 11: "munmap", 12: "brk", 16: "ioctl",
	56: "clone", 57: "fork", 58: "vfork", 59: "execve", 60: "exit", 76: "truncate",
	82: "rename", 83: "mkdir", 217: "getdents64", 231: "exit_group", 262: "newfstatat",
	316: "renameat2", 332: "statx", 435: "clone3",
	65: "semop", 220: "semtimedop",
	// a waker's: it signalled the thread it woke
	62: "kill", 200: "tkill", 234: "tgkill", 129: "rt_sigqueueinfo", 297: "rt_tgsigqueueinfo", 424: "pidfd_send_signal",
}

// PollSyscalls wait on many fds at once (poll, select, epoll): what tells a
// wait for one of several peers, or, in a thread that moved no socket
// data, a wait for work. classify and the analyses' SQL (is_poll) read it.
var PollSyscalls = []string{"poll", "select", "epoll_wait", "epoll_pwait", "epoll_pwait2", "ppoll", "pselect6"}

// SyscallNr is the x86_64 number of a syscall whyslow names (traced, or one
// the classifier recognises), false for another.
func SyscallNr(name string) (int32, bool) {
	for nr, s := range syscalls {
		if s.name == name {
			return int32(nr), true
		}
	}
	for nr, s := range waitSyscalls {
		if s == name {
			return nr, true
		}
	}
	return -1, false
}

// SyscallsOfClass lists the numbers of the traced syscalls of class c.
func SyscallsOfClass(c Class) []int32 {
	var out []int32
	for nr, s := range syscalls {
		if s.class == c {
			out = append(out, int32(nr))
		}
	}
	slices.Sort(out)
	return out
}

// SyscallName names a traced syscall, or a wait syscall, or "syscall_N".
func SyscallName(nr int32) string {
	if s, ok := syscalls[uint32(nr)]; ok && nr >= 0 {
		return s.name
	}
	if s, ok := waitSyscalls[nr]; ok {
		return s
	}
	if nr < 0 {
		return ""
	}
	return "syscall_" + itoa(int(nr))
}

// SyscallClass is the class of a traced syscall.
func SyscallClass(nr uint32) Class { return syscalls[nr].class }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// SyscallNames lists every syscall whyslow names: the traced ones with their
// class, and the waits the classifier recognises (class "none").
func SyscallNames() map[int32][2]string {
	out := make(map[int32][2]string, len(syscalls)+len(waitSyscalls))
	for nr, name := range waitSyscalls {
		out[nr] = [2]string{name, ClassNone.String()}
	}
	for nr, s := range syscalls {
		out[int32(nr)] = [2]string{s.name, s.class.String()}
	}
	return out
}
