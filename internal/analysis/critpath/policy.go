package critpath

import "github.com/whyslow/whyslow/internal/event"

// The critical path's policy: every choice the walk makes about a wait, in
// one table. The walker (walker.go, outside.go) moves along
// threads and wake-ups and asks this table what a wait means; it decides
// nothing by itself. The same table serves every root: a process (run,
// attach, explain --pid), a request (requests.Find), an incident (watch).
//
// A wait's reason is decided before the walk (classify, once per wait), and
// the edge that ended it when the graph is built (edge.go); the policy says
// how the walk treats each.
var pathPolicy = struct {
	// follow: an edge whose waker is the wait's cause, so the waker's
	// doings meanwhile are the path: a child that exited, a lock's holder,
	// the writer of a pipe, a server's answer over a socket.
	follow map[edge]bool

	// byInterrupt: an edge an interrupt made, on whatever task it
	// interrupted: a disk completion, a network card's receive path. The
	// task it names as the waker is no cause: not followed, not named, not
	// even a traced thread of the target's.
	byInterrupt map[edge]bool

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

	// heldUpBy: an edge from a process whose waits the recording does not
	// hold names that process as holding the wait up (a lock holder, a
	// pipe's writer). A socket's is not: a peer's answer is the network's
	// time, and the peer is named as the wait's object.
	heldUpBy map[edge]bool

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

	// hopIntoThread: an edge over which the path hops into a thread of the
	// waiter's own process, when that thread was serving another request
	// (MariaDB's sessions are threads of one process). Into another process
	// the path hops for any followed edge when it is outside the target,
	// and for these from every root.
	hopIntoThread map[edge]bool

	// maxDepth bounds how many hand-offs the walk follows in a chain. Each
	// hop explains a shorter span than the one before, and at any moment
	// one thread is on the path, so the walk's work is the path's length
	// whatever the depth; the bound only keeps the recursion finite. Go's
	// runtime threads hand work to each other thousands of times in a build.
	maxDepth int
}{
	follow:      map[edge]bool{edgeChild: true, edgeLock: true, edgePipe: true, edgeSocket: true, edgeWakeup: true},
	byInterrupt: map[edge]bool{edgeDevice: true, edgeCompletion: true},
	lookThrough: reasonSet(func(r event.Reason) bool { return r == event.ReasonSleep || r == event.ReasonChild }),
	busyShare:   0.25,
	working: reasonSet(func(r event.Reason) bool {
		return r == event.ReasonRunqueue || r.Disk() || r == event.ReasonNetwork
	}),
	heldUpBy:      map[edge]bool{edgeChild: true, edgeLock: true, edgePipe: true, edgeWakeup: true},
	forWork:       string(event.ReasonIdle),
	chargedToHop:  map[string]bool{string(event.ReasonIdle): true, string(event.ReasonSleep): true},
	hopIntoThread: map[edge]bool{edgeLock: true},
	maxDepth:      100000,
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
