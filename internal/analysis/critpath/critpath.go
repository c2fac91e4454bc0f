// Package critpath walks the critical path: the chain of work and waits
// that made up a root's time, walked back from its end along wake-ups
// (Trace Compass's critical path over LTTng traces, after Giraldeau and
// Dagenais). A root is a process over the target's window (run, attach,
// explain --pid) or a request answered by one thread (requests.Find); one
// walker serves both, and one table (policy.go) makes every choice it
// makes about a wait.
//
// It reads the recording through internal/analysis/source, and the
// target's waits and threads from the tables the caller made on the held
// connection (target_offcpu, target_threads: explain.Source.TargetWaits,
// internal/analysis/explain/sql/target.sql); it imports source only.
package critpath

import "github.com/whyslow/whyslow/internal/analysis/source"

// Path is the chain of work and waits that made up the target's wall
// time, walked back from its end along wake-ups (Trace Compass's critical
// path over LTTng traces, after Giraldeau and Dagenais): a wait ended by
// another traced thread is explained by what that thread did meanwhile; a
// wait ended by a process outside the target is blocked by it. Its seconds
// add up to the wall time.
type Path struct {
	ByReason map[string]float64 `json:"by_reason"`
	Segments []Segment          `json:"segments"`
	// Chain is the hand-offs that lead to the longest stretch of the verdict's
	// reason, outermost first: main waited on a child, which waited on a lock.
	Chain []Link `json:"chain"`
}

// Segment is a stretch of the path spent by one thread for one reason.
type Segment struct {
	PID    uint32  `json:"pid"`
	TID    uint32  `json:"tid"`
	Comm   string  `json:"comm"`
	Reason string  `json:"reason"`
	BeginS float64 `json:"begin_s"` // from the start of the target's window
	DurS   float64 `json:"dur_s"`
	// Object is what it waited on: a file, a peer, or the blocking process.
	Object string `json:"object,omitempty"`
	// BlockedBy is the process outside the target whose action ended the wait
	// (a lock holder that let go, the writer of a pipe).
	BlockedByPID  uint32 `json:"blocked_by_pid,omitempty"`
	BlockedByComm string `json:"blocked_by_comm,omitempty"`
	// BlockedByTID is the thread, when it is one of the waiter's own
	// process (a lock held by the thread serving another request).
	BlockedByTID uint32 `json:"blocked_by_tid,omitempty"`
	// Role is "outside" for a process outside the target that the path went
	// on into (a server, a lock holder), empty for the target's own.
	Role string `json:"role,omitempty"`
	// OwnReason is, for an outside process that was idle while the target
	// waited on it, what it did itself (sleep, idle): Reason is then the
	// target's wait on it (lock, network, ipc), and BlockedBy names it.
	OwnReason string `json:"own_reason,omitempty"`
	// waiter is, for an outside segment, the target's thread whose wait it
	// explains (the verdict names that thread).
	waiter uint32
}

// Link is one hand-off: Waiter waited (Reason) and Worker's work ended it.
type Link struct {
	WaiterTID  uint32 `json:"waiter_tid"`
	WaiterComm string `json:"waiter_comm"`
	Reason     string `json:"reason"` // child, lock, ipc, network, other; sleep for a poller looked through
	WorkerTID  uint32 `json:"worker_tid"`
	WorkerComm string `json:"worker_comm"`
	Object     string `json:"object,omitempty"`
	// WorkerPID and WorkerRole: the worker's process, "outside" when it is
	// not the target's (the path went on into a server or a lock holder).
	WorkerPID  uint32 `json:"worker_pid"`
	WorkerRole string `json:"worker_role,omitempty"`
}

// Waiter is, for a segment of a process the path hopped into, the target's
// thread whose wait it explains (0 for the target's own segments).
func (s Segment) Waiter() uint32 { return s.waiter }

// Served is what a request's walk knows of the other requests: whether
// thread tid served a request of another connection than the one walked
// during [a, b]. A lock such a thread held then is that request's, and the
// path hops into it (policy.go, hopIntoThread).
type Served interface {
	Another(tid uint32, a, b uint64) bool
}

// Walker walks critical paths over the target's threads in one window.
type Walker struct{ w *pathWalker }

// Load reads the target's waits and threads in win for the walks; the
// waits of a process outside the target are read from s when a walk
// reaches it, so s must stay held while the Walker is used.
func Load(s *source.Source, win source.Window) (*Walker, error) {
	g := &graph{threads: map[uint32]*pathThread{}, src: s, win: win}
	if err := g.load(s, win); err != nil {
		return nil, err
	}
	return &Walker{w: &pathWalker{graph: g, begin: win.Begin}}, nil
}

// Process walks the main thread of pid back from the end of the window;
// its segments' BeginS count from the window's begin. comm names the
// process if the recording saw no thread of it: asked only then, since
// finding a name is a query over every table (~6 ms of a short run's
// explanation).
func (k *Walker) Process(pid uint32, comm func() string) Path {
	w := k.w
	if w.threads[pid] == nil {
		w.threads[pid] = &pathThread{pid: pid, tid: pid, comm: comm()}
	}
	main := w.threads[pid]
	if main.born < w.win.Begin {
		main.born = 0 // it existed for the whole window
	}
	// The walk makes a segment or two for most waits it passes, and passes
	// most of a build's: grown from nothing, the slice was reallocated and
	// copied some sixteen times, half the walk's time.
	w.segs = make([]Segment, 0, w.waits)
	w.begin = w.win.Begin
	w.walk(pid, w.win.Begin, w.win.End, 0)
	return w.result()
}

// Request is a root of one request: the thread tid of process pid (named
// comm) answered it over [Begin, End].
type Request struct {
	PID, TID   uint32
	Comm       string
	Begin, End uint64
}

// Request walks r's thread back from its end to its begin; its segments'
// BeginS count from r's begin. served says which other requests each
// thread served.
func (k *Walker) Request(r Request, served Served) Path {
	w := k.w
	if w.threads[r.TID] == nil {
		w.threads[r.TID] = &pathThread{pid: r.PID, tid: r.TID, comm: r.Comm}
	}
	w.served = served
	w.begin, w.segs, w.links = r.Begin, nil, nil
	w.walk(r.TID, r.Begin, r.End, 0)
	return w.result()
}
