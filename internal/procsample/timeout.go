package procsample

import (
	"encoding/binary"
	"math/bits"

	"github.com/whyslow/whyslow/internal/event"
	"golang.org/x/sys/unix"
)

// How a call that waits with a timeout gives it: in milliseconds in an
// argument, or behind a pointer to a struct timespec (or timeval), relative
// to the call's start or an absolute time.
type timeoutArg struct {
	arg  int
	kind timeoutKind
}

type timeoutKind uint8

const (
	timeoutMillis   timeoutKind = iota // int milliseconds, negative none
	timeoutTimespec                    // *timespec, relative
	timeoutTimeval                     // *timeval, relative
	timeoutFutex                       // futex(2): by its op
	timeoutWaitv                       // futex_waitv(2): *timespec absolute, clock in arg 4
)

// timeoutArgs are the waits with a timeout that classify's rules know
// (event.PollSyscalls and its timed waits), by syscall number.
var timeoutArgs = func() map[int32]timeoutArg {
	m := map[int32]timeoutArg{}
	for name, a := range map[string]timeoutArg{
		"poll": {2, timeoutMillis}, "epoll_wait": {3, timeoutMillis}, "epoll_pwait": {3, timeoutMillis},
		"select": {4, timeoutTimeval}, "pselect6": {4, timeoutTimespec}, "ppoll": {2, timeoutTimespec},
		"epoll_pwait2": {3, timeoutTimespec}, "semtimedop": {3, timeoutTimespec}, "rt_sigtimedwait": {2, timeoutTimespec},
		"futex": {3, timeoutFutex}, "futex_waitv": {3, timeoutWaitv},
	} {
		if nr, ok := event.SyscallNr(name); ok {
			m[nr] = a
		}
	}
	return m
}()

// futex(2)'s ops that wait, and how their timeout is given.
const (
	futexWait          = 0
	futexLockPI        = 6
	futexWaitBitset    = 9
	futexWaitRequeuePI = 11
	futexLockPI2       = 13
	futexPrivate       = 128
	futexClockRealtime = 256
)

// timeoutOf is the earliest the timeout of a wait in syscall nr (args from
// /proc/.../syscall) could end it, CLOCK_MONOTONIC ns: a relative timeout
// from prevLook (the wait began after it), an absolute one as it is. 0: no
// timeout, or one behind a pointer that cannot be read (another user's
// process: process_vm_readv needs what ptrace does).
func (s *Sampler) timeoutOf(tid int, nr int32, args []uint64, prevLook uint64) uint64 {
	a, ok := timeoutArgs[nr]
	if !ok || len(args) <= a.arg {
		return 0
	}
	v := args[a.arg]
	rel := func(ns uint64, ok bool) uint64 {
		if !ok {
			return 0
		}
		return prevLook + ns
	}
	switch a.kind {
	case timeoutMillis:
		ms := int32(uint32(v))
		if ms < 0 {
			return 0
		}
		return prevLook + uint64(ms)*1e6
	case timeoutTimespec:
		return rel(s.readTimespec(tid, v, 1))
	case timeoutTimeval:
		return rel(s.readTimespec(tid, v, 1000))
	case timeoutFutex:
		op := args[1] &^ (futexPrivate | futexClockRealtime)
		switch op {
		case futexWait:
			return rel(s.readTimespec(tid, v, 1))
		case futexWaitBitset, futexWaitRequeuePI, futexLockPI2:
			return absolute(s.readTimespec(tid, v, 1))(args[1]&futexClockRealtime != 0)
		case futexLockPI:
			return absolute(s.readTimespec(tid, v, 1))(true)
		}
	case timeoutWaitv:
		if len(args) > 4 {
			return absolute(s.readTimespec(tid, v, 1))(args[4] == unix.CLOCK_REALTIME)
		}
	}
	return 0
}

// absolute is an absolute timeout as CLOCK_MONOTONIC ns, from its clock's.
func absolute(ns uint64, ok bool) func(realtime bool) uint64 {
	return func(realtime bool) uint64 {
		if !ok || ns == 0 {
			return 0
		}
		if !realtime {
			return ns
		}
		var rt, mono unix.Timespec
		unix.ClockGettime(unix.CLOCK_REALTIME, &rt)
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
		off := rt.Nano() - mono.Nano()
		if int64(ns) <= off {
			return 1 // past already
		}
		return uint64(int64(ns) - off)
	}
}

// readTimespec reads a struct timespec (unit 1) or timeval (unit 1000: its
// second field is µs) at addr in thread tid's memory: its ns; false for a
// null pointer (no timeout) or an unreadable one.
func (s *Sampler) readTimespec(tid int, addr uint64, unit uint64) (uint64, bool) {
	if addr == 0 {
		return 0, false
	}
	var b [16]byte
	if !s.readMemory(tid, addr, b[:]) {
		return 0, false
	}
	sec := int64(binary.NativeEndian.Uint64(b[:8]))
	frac := int64(binary.NativeEndian.Uint64(b[8:]))
	if sec < 0 || frac < 0 {
		return 0, false
	}
	return uint64(sec)*1e9 + uint64(frac)*unit, true
}

// The polls whose files can be read from their arguments: poll and ppoll
// an array of struct pollfd, select and pselect6 fd sets.
var (
	pollArrays = syscallSet("poll", "ppoll")
	fdSets     = syscallSet("select", "pselect6")
)

func syscallSet(names ...string) map[int32]bool {
	m := map[int32]bool{}
	for _, n := range names {
		if nr, ok := event.SyscallNr(n); ok {
			m[nr] = true
		}
	}
	return m
}

// polledFD is the one file a poll or select of thread tid waits on, read
// from its memory (its pollfd array, or its read and write fd sets); -1
// when it waits on more than one, or they cannot be read. A poll of one
// pipe is told as a read of it is (the pipe's writer is followed).
func (s *Sampler) polledFD(tid int, nr int32, args []uint64) int32 {
	const most = 64 // files, or fd numbers in a set
	switch {
	case pollArrays[nr] && len(args) > 1:
		n := args[1]
		if n == 0 || n > most {
			return -1
		}
		var b [8 * most]byte
		if !s.readMemory(tid, args[0], b[:8*n]) {
			return -1
		}
		fd := int32(-1)
		for i := uint64(0); i < n; i++ {
			f := int32(binary.NativeEndian.Uint32(b[8*i:]))
			switch {
			case f < 0: // ignored by poll
			case fd >= 0 && f != fd:
				return -1
			default:
				fd = f
			}
		}
		return fd
	case fdSets[nr] && len(args) > 2:
		n := args[0]
		if n == 0 || n > most {
			return -1
		}
		fd := int32(-1)
		for _, set := range args[1:3] {
			if set == 0 {
				continue
			}
			var b [8]byte
			if !s.readMemory(tid, set, b[:]) {
				return -1
			}
			set64 := binary.NativeEndian.Uint64(b[:])
			if n < 64 {
				set64 &= 1<<n - 1
			}
			for set64 != 0 {
				f := int32(bits.TrailingZeros64(set64))
				set64 &= set64 - 1
				if fd >= 0 && f != fd {
					return -1
				}
				fd = f
			}
		}
		return fd
	}
	return -1
}

// readMemory reads len(b) bytes at addr in thread tid's memory
// (process_vm_readv: the same user, as ptrace needs).
func (s *Sampler) readMemory(tid int, addr uint64, b []byte) bool {
	if addr == 0 || len(b) == 0 {
		return false
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	return err == nil && n == len(b)
}
