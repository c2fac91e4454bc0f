package capture

import "sync"

// cpuAccount is the on-CPU time already reported per thread, for the target
// threads in the kernel's wait slots: each drain reports what a thread's
// total grew by. A thread that has left the map is forgotten, so the account
// holds no more threads than the map.
//
// A dead thread's slot is taken out of the map once its last time is
// reported: when the slot says the thread died (its last switch was seen),
// or else once its exit event was read (retire). Left in, the dead would
// fill the map (32k threads, a quarter of an hour of a busy machine's
// churn), every drain would read them all, and a new thread would find no
// slot.
type cpuAccount struct {
	seen  map[uint32]cpuSeen
	round uint64 // the pass over the map under way

	mu     sync.Mutex
	exited map[uint32]uint64 // tid -> the pass under way when its exit was read
}

type cpuSeen struct {
	ns    uint64 // on-CPU ns reported
	round uint64 // the last pass that found the thread in the map
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

// forget forgets thread tid, whose last time has been reported (its slot
// said it died): the kernel's slot is taken out, and a thread given its tid
// later starts from nothing.
func (a *cpuAccount) forget(tid uint32) {
	delete(a.seen, tid)
	a.mu.Lock()
	delete(a.exited, tid)
	a.mu.Unlock()
}

// exit notes that thread tid exited (its exit event was read). Safe to
// call beside a pass.
func (a *cpuAccount) exit(tid uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.exited == nil {
		a.exited = make(map[uint32]uint64)
	}
	a.exited[tid] = a.round
}

// fork notes that tid names a new thread: a reused tid is not retired.
func (a *cpuAccount) fork(tid uint32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.exited, tid)
}

// retire returns the exited threads whose last time has been reported (the
// pass that just ended read them at least retireAfter passes after their
// exit) and forgets them; the caller takes them out of the kernel's map.
func (a *cpuAccount) retire() []uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []uint32
	for tid, at := range a.exited {
		if a.round < at+retireAfter {
			continue
		}
		s, ok := a.seen[tid]
		switch {
		case !ok: // not in the map: nothing to take out
		case s.round == a.round:
			out = append(out, tid)
			delete(a.seen, tid)
		default:
			continue // a pass cut short missed it: the next one reports it
		}
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
