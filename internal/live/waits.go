package live

import (
	"github.com/whyslow/whyslow/internal/event"
)

// waits counts off-CPU time into frames: each wait exactly once, the part
// that fell in each frame, whether it ended in the frame or is still going
// on at the cut. It also ties waits to the object waited on.
type waits struct {
	// counted is, per thread, the start of its wait in progress and how
	// much of it earlier frames counted already.
	counted map[uint32]countedWait
	// pending are finished waits not yet tied to an object, per thread: the
	// syscall they were in, when the capture streams it, names the file.
	pending map[uint32][]pendingWait
	// hints name objects when no syscall did: per process, what it dirtied
	// and which devices its requests went to, this frame.
	// prev* are the previous frame's: the kernel's dirty counts arrive once
	// a second, at any moment of a frame.
	dirtied, prevDirtied map[uint32]map[event.FileRef]uint64
	issued, prevIssued   map[uint32]map[uint32]uint64
}

type countedWait struct {
	start, ns uint64
	seen      bool // listed as in progress at the last cut
}

type pendingWait struct {
	end, ns uint64
	pid     uint32
	reason  event.Reason
}

// carryOver: a wait that ended this close to the cut may still see its
// syscall's exit in the next batch; it waits one frame for it.
const carryOver = 200_000_000

const maxPending = 64

func newWaits() waits {
	return waits{counted: map[uint32]countedWait{}, pending: map[uint32][]pendingWait{},
		dirtied: map[uint32]map[event.FileRef]uint64{}, issued: map[uint32]map[uint32]uint64{}}
}

// finishedWait counts a wait that just ended, less what earlier frames counted.
// Its run-queue tail (woken, not yet running) is runqueue time.
func (a *Aggregator) finishedWait(o *event.OffCPU) {
	w := &a.waits
	start := o.Time - o.Off
	var already uint64
	if c, ok := w.counted[o.TID]; ok {
		if c.start == start {
			already = c.ns
		}
		delete(w.counted, o.TID)
	}
	if o.Off <= already {
		return
	}
	rest := o.Off - already
	reason := reasonOf(o)
	runq := min(o.Runq, rest)
	if reason == event.ReasonRunqueue {
		runq = rest
	}
	a.addWait(o.PID, o.TID, o.Comm, event.ReasonRunqueue, runq)
	a.addWait(o.PID, o.TID, o.Comm, reason, rest-runq)
	// The object is named by the whole wait, not only its part in this frame.
	if ns := o.Off - min(o.Runq, o.Off); reason != event.ReasonRunqueue && ns > 0 {
		p := append(w.pending[o.TID], pendingWait{end: o.Time - min(o.Runq, o.Off), ns: ns, pid: o.PID, reason: reason})
		if len(p) > maxPending {
			p = p[len(p)-maxPending:]
		}
		w.pending[o.TID] = p
	}
}

// inProgressWait counts the part of a wait still going on that earlier
// frames did not.
func (a *Aggregator) inProgressWait(o *event.OffCPU) {
	w := &a.waits
	start := o.Time - o.Off
	c := w.counted[o.TID]
	if c.start != start {
		c = countedWait{start: start}
	}
	if o.Off > c.ns {
		r := reasonOf(o)
		a.addWait(o.PID, o.TID, "", r, o.Off-c.ns)
		if r != event.ReasonRunqueue {
			a.hintObject(o.PID, o.TID, r, o.Off-c.ns)
		}
		c.ns = o.Off
	}
	c.seen = true
	w.counted[o.TID] = c
}

// reasonOf is a wait's reason as the live view counts it: a runnable
// thread waited for a CPU, or was held off by its cgroup's quota.
func reasonOf(o *event.OffCPU) event.Reason {
	if o.State == 'R' && o.Quota {
		return event.ReasonCPUQuota
	}
	if o.State == 'R' {
		return event.ReasonRunqueue
	}
	if o.Reason == "" {
		return event.ReasonOther
	}
	return o.Reason
}

func (a *Aggregator) addWait(pid, tid uint32, comm string, r event.Reason, ns uint64) {
	if ns == 0 {
		return
	}
	p, t := a.thread(pid, tid)
	p.Wait[r] += ns
	t.Wait[r] += ns
}

// blockedSyscall ties the waits a thread had inside a syscall to its file.
func (a *Aggregator) blockedSyscall(s *event.Syscall) {
	w := &a.waits
	pend := w.pending[s.TID]
	if !s.Blocked || len(pend) == 0 {
		return
	}
	end := s.Time + s.Dur
	var keep []pendingWait
	for _, p := range pend {
		switch {
		case p.end < s.Time:
			// before this call: a wait outside the traced syscalls
			a.hintObject(s.PID, s.TID, p.reason, p.ns)
		case p.end <= end && s.File.Known():
			a.waitedOn(s.PID, s.TID, Object{File: s.File}, p.ns)
		case p.end <= end:
		default:
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		delete(w.pending, s.TID)
	} else {
		w.pending[s.TID] = keep
	}
}

func (a *Aggregator) waitedOn(pid, tid uint32, o Object, ns uint64) {
	p, t := a.thread(pid, tid)
	p.On[o] += ns
	t.On[o] += ns
	if o.File.Known() {
		a.file(o.File).Waited += ns
	}
}

// hintObject names the object of a wait no syscall named, from what the
// process did this frame: the file it dirtied most for a dirty-throttle or
// write wait, else the device its requests went to most.
func (a *Aggregator) hintObject(pid, tid uint32, r event.Reason, ns uint64) {
	w := &a.waits
	switch r {
	case event.ReasonDirtyThrottle, event.ReasonDiskWrite, event.ReasonSync:
		if f, ok := topKey(w.dirtied[pid], w.prevDirtied[pid]); ok {
			a.waitedOn(pid, tid, Object{File: f}, ns)
			return
		}
		fallthrough
	case event.ReasonDiskRead:
		if d, ok := topKey(w.issued[pid], w.prevIssued[pid]); ok {
			a.waitedOn(pid, tid, Object{Dev: d}, ns)
		}
	}
}

// topKey is the key with the largest value in cur, or else in prev.
func topKey[K comparable](cur, prev map[K]uint64) (K, bool) {
	var best K
	for _, m := range []map[K]uint64{cur, prev} {
		var most uint64
		for k, v := range m {
			if v > most {
				best, most = k, v
			}
		}
		if most > 0 {
			return best, true
		}
	}
	return best, false
}

func (a *Aggregator) noteDirtied(pid uint32, f event.FileRef, bytes uint64) {
	m := a.waits.dirtied[pid]
	if m == nil {
		m = map[event.FileRef]uint64{}
		a.waits.dirtied[pid] = m
	}
	m[f] += bytes
}

func (a *Aggregator) noteIssued(pid, dev uint32, bytes uint64) {
	m := a.waits.issued[pid]
	if m == nil {
		m = map[uint32]uint64{}
		a.waits.issued[pid] = m
	}
	m[dev] += bytes
}

// endWaits closes the frame's accounts at now: waits in progress that were
// not listed at this cut ended (their finishing event is on its way) and
// are forgotten after one more frame; pending waits too old to meet their
// syscall get a hinted object.
func (a *Aggregator) endWaits(now uint64, listed map[uint32]bool) {
	w := &a.waits
	for tid, c := range w.counted {
		switch {
		case listed[tid]:
		case c.seen:
			c.seen = false
			w.counted[tid] = c
		default:
			delete(w.counted, tid)
		}
	}
	for tid, pend := range w.pending {
		var keep []pendingWait
		for _, p := range pend {
			if p.end+carryOver > now {
				keep = append(keep, p)
				continue
			}
			a.hintObject(p.pid, tid, p.reason, p.ns)
		}
		if len(keep) == 0 {
			delete(w.pending, tid)
		} else {
			w.pending[tid] = keep
		}
	}
	w.prevDirtied, w.dirtied = w.dirtied, map[uint32]map[event.FileRef]uint64{}
	w.prevIssued, w.issued = w.issued, map[uint32]map[uint32]uint64{}
}
