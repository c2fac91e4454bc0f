package capture

import (
	"sync"

	"github.com/whyslow/whyslow/internal/event"
)

// Waits reads the waits in progress: threads off CPU right now. A finished
// wait reaches user space only when the thread runs again, so a live view
// that counted finished waits alone would not show a thread stuck in a long
// sync until the sync ended. It is its own reader, apart from Run, so that
// Run's hot path is untouched.
type Waits struct {
	e  *Engine
	mu sync.Mutex
	st *stacks
}

// Waits returns a reader of the waits in progress.
func (e *Engine) Waits() *Waits {
	return &Waits{e: e, st: newStacks(e.maps.Stacks, &e.ownStacks)}
}

// Limits reads again, now, the cgroup limits noted so far (the CPU quotas
// and memory limits that held a process up) as phase: a watch keeps a first
// reading in every window, and ends an incident with one, so that its counts
// are the window's, not the container's since it began.
func (w *Waits) Limits(phase string) []event.Event {
	return w.e.limits.read(monotonicNow(), phase)
}

// Now lists every thread of the traced set off CPU at this moment, as an
// OffCPU whose Time is now and Off how long it has waited so far, classified
// like a finished wait. Its Header.Time-Off is the same start the finished
// wait will carry, so a consumer can count each wait once. Polls on sockets
// are told from other polls only by Run (which sees the sockets), so a poll
// in progress is classified ipc here.
func (w *Waits) Now() (now uint64, out []*event.OffCPU) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.e.maps.OffcpuStart == nil { // the engine is closed
		return 0, nil
	}
	now = monotonicNow()
	var tid uint32
	var slot whyslowWaitSlot
	it := w.e.maps.OffcpuStart.Iterate()
	for it.Next(&tid, &slot) {
		s := &slot.W
		if s.Ts == 0 || now <= s.Ts {
			continue
		}
		o := &event.OffCPU{Header: event.Header{Time: now, PID: s.Pid, TID: tid},
			Off: now - s.Ts, State: byte(s.State), StackID: s.StackId, Syscall: s.Syscall, Waits: 1, Quota: s.Quota != 0}
		if o.State == 'R' && !o.Quota { // a quota's wait is not for a CPU
			o.Runq = o.Off
		}
		w.st.classify(o)
		out = append(out, o)
	}
	return now, out
}
