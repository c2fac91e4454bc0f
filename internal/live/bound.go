package live

// bound keeps each thread's time within its frame: on CPU and off CPU
// together at most the interval. The sources do not line up with the frame
// exactly: on-CPU time is handed over once a second at its own moments
// (the drain), and a wait that ended before the cut may reach the frame
// after it. A single-threaded process showed 104% of an interval. What is
// over is taken from every part in proportion, and the process's times are
// summed again from its threads.
func bound(f *Frame) {
	if f.End <= f.Start {
		return
	}
	span := f.End - f.Start
	for _, p := range f.Procs {
		cut := false
		for _, t := range p.Threads {
			if boundTimes(&t.Times, span) {
				cut = true
			}
		}
		if cut {
			p.Times = sumThreads(p)
		}
	}
}

// boundTimes scales t down to span in all when it holds more; it says
// whether it did.
func boundTimes(t *Times, span uint64) bool {
	total := t.CPU
	for _, ns := range t.Wait {
		total += ns
	}
	if total <= span {
		return false
	}
	k := float64(span) / float64(total)
	scale := func(ns uint64) uint64 { return uint64(float64(ns) * k) } // rounds down: the sum stays within span
	t.CPU = scale(t.CPU)
	for r, ns := range t.Wait {
		t.Wait[r] = scale(ns)
	}
	for o, ns := range t.On {
		t.On[o] = scale(ns)
	}
	return true
}

// sumThreads is a process's times as the sum of its threads'.
func sumThreads(p *Proc) Times {
	out := newTimes()
	for _, t := range p.Threads {
		out.CPU += t.CPU
		for r, ns := range t.Wait {
			out.Wait[r] += ns
		}
		for o, ns := range t.On {
			out.On[o] += ns
		}
	}
	return out
}
