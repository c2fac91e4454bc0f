package critpath

// The critical path across processes. A wait of the target ended by a
// process outside it (a server that answered, a backend that let go of a
// row lock) goes on into that process when the recording holds its waits:
// every process's in a system-wide recording, a peer's in one of a target
// (peers.bpf.h captures the processes a target waits on, from when they
// take part and, through a short history, the waits just before). What the
// outside process did meanwhile is the path: its CPU, its disk waits, its
// fsync, its own wait on a third process, followed the same way. Where it
// was itself idle (asleep, waiting for work: a lock holder whose session
// sleeps), the time stays the hop's wait, blocked by that process.

// RoleOutside marks segments and links of a process outside the target.
const RoleOutside = "outside"

// pathHop is the hand-off into the outside process being walked, or into
// the lock holder.
type pathHop struct {
	reason, object string
	pid            uint32
	// tid: the hop is into this one thread of the waiter's own process (a
	// lock holder serving another request), 0 into the whole process pid
	tid    uint32
	comm   string
	waiter uint32 // the target's thread that waited, at the first hop
}

// hopped says whether th is a thread of what the path hopped into.
func (w *pathWalker) hopped(th *pathThread) bool {
	switch {
	case th.outside:
		return true
	case w.hop == nil:
		return false
	case w.hop.tid != 0:
		return th.tid == w.hop.tid
	}
	return th.pid == w.hop.pid
}

// hopInto is the hop the path makes following th's wait iv on waker over
// [a, b], or nil when the waker's time is the waiter's own. Into another
// process the path hops when that process is outside the target, or holds
// a lock the waiter waited on (from every root: one backend behind
// another's row lock, recorded from the postmaster). Into a thread of the
// waiter's own process it hops when that thread held the lock while serving
// another request (w.served: MariaDB's sessions are threads of one process).
func (w *pathWalker) hopInto(th, waker *pathThread, iv *pathInterval, a, b uint64) *pathHop {
	holder := pathPolicy.hopIntoThread[iv.edge]
	var tid uint32
	switch {
	case waker.pid != th.pid && (waker.outside || holder):
	case holder && waker.pid == th.pid && w.served != nil && w.served.Another(waker.tid, a, b):
		tid = waker.tid
	default:
		return nil // the walk's common case: nothing made
	}
	h := &pathHop{reason: iv.reason, object: iv.object, pid: waker.pid, tid: tid, comm: waker.comm, waiter: th.tid}
	if w.hop != nil {
		h.waiter = w.hop.waiter
	}
	return h
}

// hopSegment words a segment of the process the path hopped into: its idle
// stretches (pathPolicy.chargedToHop) are the hop's wait, blocked by it.
func (w *pathWalker) hopSegment(seg *Segment) {
	seg.waiter = w.hop.waiter
	if !pathPolicy.chargedToHop[seg.Reason] {
		return
	}
	seg.OwnReason, seg.Reason = seg.Reason, w.hop.reason
	if seg.Object == "" {
		seg.Object = w.hop.object
	}
	seg.BlockedByPID, seg.BlockedByComm, seg.BlockedByTID = w.hop.pid, w.hop.comm, w.hop.tid
}
