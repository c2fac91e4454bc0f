package capture

// cpuAccount is the on-CPU time already reported per thread, for the threads
// in the kernel's cpu map: each drain reports what a thread's total grew by.
// A thread that has left the map (the map is an LRU: an exited thread is
// evicted when room is needed) is forgotten, so the account holds no more
// threads than the map, however many come and go in a long exporter or top.
type cpuAccount struct {
	seen  map[uint32]cpuSeen
	round uint64 // the pass over the map under way
}

type cpuSeen struct {
	ns    uint64 // on-CPU ns reported
	round uint64 // the last pass that found the thread in the map
}

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
	a.round++
}
