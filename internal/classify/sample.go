package classify

import (
	"strings"

	"github.com/whyslow/whyslow/internal/event"
)

// Sample is what one look at a thread in /proc tells (the sampled capture,
// where BPF cannot load): its state, its syscall and that call's file, its
// wait channel or stack, and how its run delay grew since the last look.
// It is named by Reason, as a traced wait is: a sample is a fact set, not a
// second rule book.
type Sample struct {
	State   byte
	Syscall int32
	// Frames is the kernel stack (/proc/PID/task/TID/stack, root only);
	// Wchan the wait channel, one function, readable without root.
	Frames []string
	Wchan  string
	// FileKind is the kind of the syscall's file (/proc/PID/fd).
	FileKind      event.FileKind
	PollOnSockets bool
	// RanNS and RunDelayNS: how the thread's time on a CPU and its time
	// waiting for one grew over the interval (schedstat); IntervalNS is the
	// interval, and WasRunnable says the thread was runnable at its start
	// too.
	RanNS, RunDelayNS, IntervalNS uint64
	WasRunnable                   bool
	// Throttled: its cgroup's CPU quota throttled it over the interval.
	Throttled bool
	// TimedOut: the wait ended no earlier than its own timeout could end
	// it (told once the wait is over: a poll, a select, a futex with a
	// timeout). The timer was its waker, as a traced wait's WakerTimer.
	TimedOut bool
	// Reclaim: an uninterruptible wait while its memory cgroup was at its
	// limit (Input.Reclaim), told by the cgroup's counts where no stack
	// says where it waited.
	Reclaim bool
}

// SampleReason names a sample: the reason of the wait it was in, or for a
// runnable thread the reason of the part of the interval it waited for a
// CPU, which is cpuShare's complement (cpu the rest). /proc cannot tell a
// thread on a CPU from one queued for it: schedstat's growth over the
// interval splits the interval between them. The run delay grows only
// when the thread gets a CPU, so a thread runnable at both ends of the
// interval waited all of it that it did not run (held by a quota for a
// whole period, it had no arrival to book its delay at).
func SampleReason(s Sample) (reason event.Reason, cpuShare float64) {
	if s.State == 'R' {
		waited := s.RunDelayNS
		if s.WasRunnable && s.IntervalNS > s.RanNS {
			waited = max(waited, s.IntervalNS-s.RanNS)
		}
		total := s.RanNS + waited
		if total == 0 || waited == 0 {
			return event.ReasonCPU, 1
		}
		// Throttled by its quota: the kernel's quota reason, as a traced
		// wait with Input.Quota; else the run queue.
		r := Reason(Input{State: 'R', Syscall: -1, Quota: s.Throttled})
		return r, float64(s.RanNS) / float64(total)
	}
	frames := s.Frames
	if len(frames) == 0 && s.Wchan != "" && knownFrame(s.Wchan) {
		// Without a stack, the wait channel is its one frame when a rule
		// knows it; an unknown one (wait_woken, under sk_wait_data) says
		// less than the syscall's file.
		frames = []string{s.Wchan}
	}
	in := Input{State: s.State, Syscall: s.Syscall, Frames: frames, FileKind: s.FileKind,
		PollOnSockets: s.PollOnSockets, WakerSyscall: -1, Reclaim: s.Reclaim && len(s.Frames) == 0}
	if s.TimedOut {
		// Its timer ended it: the facts of a traced wait the timer woke,
		// which has no stack (an interruptible wait's is not taken).
		in.WakerSyscall = event.WakerTimer
		if s.State == 'S' {
			in.Frames = nil
		}
	}
	return Reason(in), 0
}

// knownFrame says whether a rule names this kernel function.
func knownFrame(fn string) bool {
	for _, r := range rules {
		if strings.HasPrefix(fn, r.prefix) {
			return true
		}
	}
	return strings.HasPrefix(fn, "io_schedule") || strings.HasPrefix(fn, "do_sys_poll") ||
		strings.HasPrefix(fn, "do_select") || strings.HasPrefix(fn, "ep_poll") || strings.HasPrefix(fn, "do_epoll_wait")
}
