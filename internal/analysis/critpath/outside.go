package critpath

import (
	"database/sql"
	"fmt"
)

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
	holder := pathPolicy.hopIntoThread[iv.reason]
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

// reach loads the waits of process pid, outside the target, the first time
// the walk reaches it, and returns its thread tid (nil: the recording holds
// no wait of that process, and the path stops at it).
func (w *pathWalker) reach(pid, tid uint32) *pathThread {
	if w.src == nil {
		return nil
	}
	if w.reached == nil {
		w.reached = map[uint32]bool{}
	}
	if !w.reached[pid] {
		w.reached[pid] = true
		if err := w.loadOutside(pid); err != nil {
			return nil // the path stops at the process, as it did before
		}
	}
	th := w.threads[tid]
	if th == nil || !th.outside {
		return nil
	}
	return th
}

// loadOutside reads the waits of an outside process in the window, with the
// reasons the target's would get (target_offcpu), and this for an outside
// process: a poll that no answer ended (a timeout) is a sleep.
func (w *pathWalker) loadOutside(pid uint32) error {
	s := w.src
	if !s.HasRows("offcpu_raw") {
		return nil
	}
	rows, err := s.Query(sqlOf("path_outside_waits"),
		sql.Named("p", pid), sql.Named("b", w.win.Begin), sql.Named("e", w.win.End))
	if err != nil {
		return fmt.Errorf("reading the waits of process %d: %w", pid, err)
	}
	defer rows.Close()
	for rows.Next() {
		var tid uint32
		var comm string
		var iv pathInterval
		if err := rows.Scan(&tid, &comm, (*scanU64)(&iv.start), (*scanU64)(&iv.end), (*scanU64)(&iv.runq), &iv.reason,
			(*scanU32)(&iv.wakerPID), (*scanU32)(&iv.wakerTID), &iv.wakerComm, &iv.object, &iv.forWork,
			&iv.poll, &iv.answered, &iv.wakerOnSocket); err != nil {
			return err
		}
		th := w.threads[tid]
		if th == nil {
			th = &pathThread{pid: pid, tid: tid, comm: comm, outside: true}
			w.threads[tid] = th
		}
		if !th.outside {
			continue // a target's thread: loaded as the target's
		}
		if comm != "" {
			th.comm = comm
		}
		iv.start = max(iv.start, w.win.Begin)
		iv.end = min(iv.end, w.win.End)
		iv.runq = min(iv.runq, iv.end-iv.start)
		if n := len(th.offs); n > 0 && th.offs[n-1].end > iv.start {
			iv.start = th.offs[n-1].end // overlapping rows (history and live): keep time once
			if iv.start >= iv.end {
				continue
			}
			iv.runq = min(iv.runq, iv.end-iv.start)
		}
		th.offs = append(th.offs, iv)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, th := range w.threads {
		if th.pid == pid && th.outside {
			outsidePollRuns(th.offs)
		}
	}
	w.live = nil // the index of lives is rebuilt with the new threads
	return nil
}
