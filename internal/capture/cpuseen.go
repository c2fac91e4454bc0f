package capture

import "sync"

// cpuAccount is the on-CPU time already reported per thread, for the target
// threads in the kernel's wait slots: each drain reports what a thread's
// total grew by. A thread that has left the map is forgotten, so the account
// holds no more threads than the map.
//
// A dead thread's slot is taken out of the map once its last time is
// reported: when the slot says the thread died (its last switch was seen),
// or else once its exit event was read (due). Left in, the dead would fill
// the map (32k threads, a quarter of an hour of a busy machine's churn),
// every drain would read them all, and a new thread would find no slot.
//
// A thread's entry is forgotten only when its slot is gone from the map: a
// slot's count goes on across the lives of its thread id (the kernel carries
// a new life on from the last one's count, bpf/sched.bpf.h), so forgetting a
// tid whose slot a new life kept would report the last life's time again.
type cpuAccount struct {
	seen  map[uint32]cpuSeen
	round uint64 // the pass over the map under way

	mu     sync.Mutex
	exited map[uint32]exitRead // by tid
}

// exitRead is a thread's exit as read: in which pass, and when it exited
// (a life that began later is another thread's).
type exitRead struct{ round, at uint64 }

type cpuSeen struct {
	ns    uint64 // on-CPU ns reported
	round uint64 // the last pass that found the thread in the map
	life  uint64 // the life the slot held then (its thread's start time)
}

// retireAfter is how many passes an exited thread stays in the map: its exit
// is traced before it last leaves the CPU, so the pass under way when the
// exit is read may have read it still running; the next one, a drain period
// later, holds its last nanoseconds.
const retireAfter = 1

// report returns the on-CPU ns of thread tid not reported yet, its total
// being total now, and counts them as reported.
func (a *cpuAccount) report(tid uint32, total uint64) uint64 {
	if a.seen == nil {
		a.seen = make(map[uint32]cpuSeen)
	}
	s := a.seen[tid]
	var d uint64
	if total > s.ns {
		d, s.ns = total-s.ns, total
	}
	s.round = a.round
	a.seen[tid] = s
	return d
}

// lifeBefore returns what the life before ran and was not reported, when
// thread tid's slot holds a life the account has not seen it hold (life,
// which took the slot at count base): a tid comes round again within a
// pass, and the slot's count goes on from the last life's. Called before
// report in each pass.
func (a *cpuAccount) lifeBefore(tid uint32, life, base uint64) uint64 {
	if a.seen == nil {
		a.seen = make(map[uint32]cpuSeen)
	}
	s := a.seen[tid]
	if s.life == life {
		return 0
	}
	var d uint64
	if base > s.ns {
		d, s.ns = base-s.ns, base
	}
	s.life = life
	a.seen[tid] = s
	return d
}

// forget forgets thread tid, whose slot was taken out of the map: a thread
// given its tid later starts from nothing.
func (a *cpuAccount) forget(tid uint32) {
	delete(a.seen, tid)
}

// exit notes that thread tid exited at time at (its exit event was read).
// Safe to call beside a pass.
func (a *cpuAccount) exit(tid uint32, at uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.exited == nil {
		a.exited = make(map[uint32]exitRead)
	}
	a.exited[tid] = exitRead{a.round, at}
}

// fork notes that tid names a new thread: its last life's exit is not due.
func (a *cpuAccount) fork(tid uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.exited, tid)
}

// dueExit is an exited thread whose last time a pass has read: its tid, and
// when it exited.
type dueExit struct {
	tid uint32
	at  uint64
}

// due returns the exited threads whose last time the pass that just ended
// has read (it began at least retireAfter passes after their exit was
// read), and forgets their exits. The caller takes out their slots if they
// still hold the life that exited.
func (a *cpuAccount) due() []dueExit {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []dueExit
	for tid, x := range a.exited {
		if a.round < x.round+retireAfter {
			continue
		}
		if s, ok := a.seen[tid]; ok && s.round != a.round {
			continue // a pass cut short missed it: the next one reads it
		}
		out = append(out, dueExit{tid, x.at})
		delete(a.exited, tid)
	}
	return out
}

// endRound ends a pass over the map. A complete pass forgets the threads it
// did not find; one cut short (the map iteration failed) forgets nothing, or
// a thread it missed would be reported again from zero.
func (a *cpuAccount) endRound(complete bool) {
	if complete {
		for tid, s := range a.seen {
			if s.round != a.round {
				delete(a.seen, tid)
			}
		}
	}
	a.mu.Lock()
	a.round++
	a.mu.Unlock()
}
