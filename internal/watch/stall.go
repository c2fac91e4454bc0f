package watch

import (
	"fmt"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// stalls finds threads stuck: in one uninterruptible wait, a sync, or dirty
// throttling, for longer than the threshold. A wait is seen twice: in
// progress (the engine's list of threads off CPU now, polled), so the
// incident fires while the thread is still stuck; and when it ends, for a
// wait shorter than the poll. Dirty throttling comes in pauses of at most
// 200 ms (the kernel's MAX_PAUSE), so a thread's pauses with little running
// between them add up to one stall.
type stalls struct {
	over uint64 // ns
	// runs is, per thread, its throttling so far: pauses separated by less
	// than throttleGap of running.
	runs map[uint32]*throttleRun
	// fired is, per thread, the stall already reported (or a kernel
	// thread's, never reported), so one stall fires once: by its start,
	// kept while the stall is still seen.
	fired map[uint32]firedStall
	// isKernel tells kernel threads, never stalled on anyone's behalf.
	isKernel func(pid uint32) bool
}

type firedStall struct {
	start, seen uint64
}

type throttleRun struct {
	start, end, total uint64
}

// throttleGap: a writer that runs longer than this between pauses has
// stopped being throttled for a while.
const throttleGap = 100 * uint64(time.Millisecond)

func newStalls(over time.Duration) *stalls {
	return &stalls{over: uint64(over), runs: map[uint32]*throttleRun{}, fired: map[uint32]firedStall{}, isKernel: kernelThread}
}

// stalling says whether a wait is of the kind that stalls a program on the
// system's behalf: storage in any form, or any uninterruptible sleep.
func stalling(o *event.OffCPU) bool {
	return o.Reason.Disk() || o.State == 'D'
}

// finished looks at a wait that ended.
func (s *stalls) finished(o *event.OffCPU) *Trigger {
	if o.Outside || !stalling(o) {
		return nil
	}
	start := o.Time - o.Off
	if o.Reason == event.ReasonDirtyThrottle {
		r := s.runs[o.TID]
		if r == nil || start > r.end+throttleGap {
			r = &throttleRun{start: start}
			s.runs[o.TID] = r
		}
		r.end, r.total = o.Time, r.total+o.Off
		if r.total > s.over {
			return s.fire(o, r.start, fmt.Sprintf("dirty-throttled %s in %s", secs(r.total), secs(o.Time-r.start)))
		}
		return nil
	}
	if o.Off > s.over {
		return s.fire(o, start, fmt.Sprintf("%s %s in one wait", o.Reason, secs(o.Off)))
	}
	return nil
}

// inProgress looks at a wait still going on.
func (s *stalls) inProgress(o *event.OffCPU) *Trigger {
	if !stalling(o) || o.Off <= s.over {
		return nil
	}
	return s.fire(o, o.Time-o.Off, fmt.Sprintf("%s %s so far, in one wait", o.Reason, secs(o.Off)))
}

func (s *stalls) fire(o *event.OffCPU, start uint64, detail string) *Trigger {
	if f, ok := s.fired[o.TID]; ok && f.start == start {
		s.fired[o.TID] = firedStall{start, o.Time}
		return nil
	}
	if s.isKernel(o.PID) {
		s.fired[o.TID] = firedStall{start, o.Time}
		return nil
	}
	comm := o.Comm
	if comm == "" {
		comm = threadComm(o.PID, o.TID)
	}
	// A thread's throttling run fires once: from its start, not each pause.
	s.fired[o.TID] = firedStall{start, o.Time}
	return &Trigger{Kind: KindStall, At: start, PID: o.PID, TID: o.TID, Comm: comm, Detail: detail}
}

// forget drops state older than before: threads long gone or idle.
func (s *stalls) forget(before uint64) {
	for tid, r := range s.runs {
		if r.end < before {
			delete(s.runs, tid)
		}
	}
	for tid, f := range s.fired {
		if f.seen < before { // a stall seen in progress a second ago is kept, however old
			delete(s.fired, tid)
		}
	}
}

func secs(ns uint64) string {
	return fmt.Sprintf("%.2f s", float64(ns)/1e9)
}
