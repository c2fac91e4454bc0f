package critpath

import "github.com/whyslow/whyslow/internal/event"

// The critical path's policy: every choice the walk makes about a wait, in
// one table. The walker (walker.go, outside.go) moves along
// threads and wake-ups and asks this table what a wait means; it decides
// nothing by itself. The same table serves every root: a process (run,
// attach, explain --pid), a request (requests.Find), an incident (watch).
//
// A wait's reason is decided before the walk (classify, once per wait); the
// policy only says how the walk treats each reason.
var pathPolicy = struct {
	// follow: a wait whose waker is its cause, so the waker's doings
	// meanwhile are the path: a child that exited, a lock's holder, the
	// writer of a pipe, a server's answer. Disk and timer wake-ups are not
	// followed: the waker is an interrupt that happened to run on some
	// task's CPU, or the waiter itself.
	follow map[string]bool

	// lookThrough: a wait that says nothing of what the waiter waited on
	// (a poller asleep on its timer, a parent waiting for children that did
	// not exit while capture watched): the busiest other thread of the
	// target meanwhile is the path, if it worked at least busyShare of it.
	lookThrough map[string]bool
	busyShare   float64

	// working: what counts as working when looking for the busiest thread:
	// on a CPU, waiting for one, for the disk or the network. Sleeping,
	// waiting on locks, children or for work is not.
	working map[string]bool

	// heldUpBy: a wait ended by a process whose waits the recording does not
	// hold names that process as holding it up (a lock holder, a pipe's
	// writer). Network is not: a peer's answer is the network's time, and
	// the peer is named as the wait's object.
	heldUpBy map[string]bool

	// forWork is what a wait for work is called (a server idle between
	// requests, a backend awaiting its client's next statement): the
	// chain ends there, and it never goes on into the client that brought
	// the work.
	forWork string

	// chargedToHop: what a process the path hopped into (a server, a lock
	// holder) did that is no work of its own for the waiter. Those
	// stretches stay the waiter's wait (the hop's reason), held up by that
	// process, with its own reason kept beside (OwnReason).
	chargedToHop map[string]bool

	// hopIntoThread: a wait for which the path hops into a thread of the
	// waiter's own process, when that thread was serving another request
	// (MariaDB's sessions are threads of one process). Into another process
	// the path hops for any followed wait when it is outside the target,
	// and for these from every root.
	hopIntoThread map[string]bool

	// onSocketOnly: a wait of these reasons was ended by its waker only if
	// the waker was sending on a socket as it woke it (the kernel described
	// that socket). Otherwise a device ended it: a network card's receive
	// path runs in a softirq on whatever task it interrupted, and a
	// retransmission's timer likewise, and that task is no cause. Over
	// loopback the sender runs the receive path itself, in its send.
	onSocketOnly map[string]bool

	// maxDepth bounds how many hand-offs the walk follows in a chain. Each
	// hop explains a shorter span than the one before, and at any moment
	// one thread is on the path, so the walk's work is the path's length
	// whatever the depth; the bound only keeps the recursion finite. Go's
	// runtime threads hand work to each other thousands of times in a build.
	maxDepth int
}{
	follow: reasonSet(func(r event.Reason) bool {
		return r == event.ReasonChild || r == event.ReasonLock || r == event.ReasonIPC || r == event.ReasonNetwork ||
			r == event.ReasonOther
	}),
	lookThrough: reasonSet(func(r event.Reason) bool { return r == event.ReasonSleep || r == event.ReasonChild }),
	busyShare:   0.25,
	working: reasonSet(func(r event.Reason) bool {
		return r == event.ReasonRunqueue || r.Disk() || r == event.ReasonNetwork
	}),
	heldUpBy: reasonSet(func(r event.Reason) bool {
		return r == event.ReasonChild || r == event.ReasonLock || r == event.ReasonIPC || r == event.ReasonOther
	}),
	forWork:       string(event.ReasonIdle),
	chargedToHop:  map[string]bool{string(event.ReasonIdle): true, string(event.ReasonSleep): true},
	hopIntoThread: map[string]bool{string(event.ReasonLock): true},
	onSocketOnly:  map[string]bool{string(event.ReasonNetwork): true},
	maxDepth:      100000,
}

// wokenBy says whether iv's waker ended it (onSocketOnly), so that the walk
// may follow it or name it.
func wokenBy(iv *pathInterval) bool {
	return !pathPolicy.onSocketOnly[iv.reason] || iv.wakerOnSocket
}

// ownReason is what a wait is on the path when the walk does not go on
// through it: its reason, or forWork for a wait for work.
func ownReason(iv *pathInterval) string {
	if iv.forWork {
		return pathPolicy.forWork
	}
	return iv.reason
}

// busyEnough says whether busy of a span of span is enough for the busiest
// thread to stand in for a sleeper's wait (lookThrough).
func busyEnough(busy, span uint64) bool {
	return float64(busy) >= pathPolicy.busyShare*float64(span)
}
