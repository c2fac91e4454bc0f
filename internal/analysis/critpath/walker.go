package critpath

import (
	"sort"

	"github.com/whyslow/whyslow/internal/event"
)

// pathInterval is one off-CPU interval of a traced thread.
type pathInterval struct {
	start, end, runq uint64
	reason           string
	wakerPID         uint32
	wakerTID         uint32
	wakerComm        string
	object           string
	forWork          bool
	// wakerOnSocket: the waker was sending on a socket as it woke the
	// thread (edgeSocket).
	wakerOnSocket bool
	// edge: what ended it (edgeOf), typed when the graph is built.
	edge edge
}

type pathThread struct {
	pid, tid   uint32
	comm       string
	born, died uint64 // 0: before / after the window
	parent     uint32 // the thread that created it
	offs       []pathInterval
	// walking counts the walks of it under way: the path never goes back
	// into a thread whose span it is explaining (a thread cannot have woken
	// another while it was itself waiting).
	walking int
	// outside: a thread of a process outside the target (outside.go).
	outside bool
}

// pathWalker walks the graph from a root: the hop it is in, the requests
// a request's walk knows of, and the path it makes.
type pathWalker struct {
	*graph
	// hop is the hand-off into the outside process (or lock holder) being
	// walked (outside.go).
	hop *pathHop
	// served: the request windows of each thread, when the walk explains
	// requests (requests.Find), set by Request for the request being walked.
	served Served
	begin  uint64
	segs   []Segment // in reverse time order while walking
	links  []pathLinkSpan
}

// pathLinkSpan is a hand-off with the span it explains and its depth.
type pathLinkSpan struct {
	Link
	a, b  uint64
	depth int
}

// walk explains [from, to] of thread tid, latest first.
func (w *pathWalker) walk(tid uint32, from, to uint64, depth int) {
	th := w.threads[tid]
	th.walking++
	defer func() { th.walking-- }()
	t := to
	for t > from {
		if th.born > from && t <= th.born {
			// Before the thread existed, the path is in whoever created it.
			if p := w.threads[th.parent]; p != nil && p.tid != tid && depth < pathPolicy.maxDepth {
				w.walk(p.tid, from, t, depth+1)
			} else {
				w.add(th, "other", from, t, nil)
			}
			return
		}
		if th.died != 0 && t > th.died {
			// After it exited (the window's end, lingering): nothing of its own.
			a := max(from, th.died)
			w.add(th, string(event.ReasonCPU), a, t, nil)
			t = a
			continue
		}
		lo := max(from, th.born)
		i := sort.Search(len(th.offs), func(i int) bool { return th.offs[i].end >= t })
		if i < len(th.offs) && th.offs[i].start < t {
			iv := &th.offs[i]
			a := max(lo, iv.start)
			if woken := iv.end - iv.runq; t > woken {
				ra := max(a, woken)
				w.add(th, string(event.ReasonRunqueue), ra, t, nil)
				t = ra
			}
			if t > a {
				w.wait(th, iv, a, t, depth)
			}
			t = a
			continue
		}
		a := lo
		if i > 0 && th.offs[i-1].end > a {
			a = th.offs[i-1].end
		}
		w.add(th, string(event.ReasonCPU), a, t, nil)
		t = a
	}
}

// wait explains [a, b] of an off-CPU interval of th.
func (w *pathWalker) wait(th *pathThread, iv *pathInterval, a, b uint64, depth int) {
	var waker *pathThread
	if !pathPolicy.byInterrupt[iv.edge] {
		waker = w.threads[iv.wakerTID]
	}
	if waker == nil && pathPolicy.follow[iv.edge] && iv.wakerPID != 0 && iv.wakerPID != th.pid && !iv.forWork {
		waker = w.reach(iv.wakerPID, iv.wakerTID)
	}
	traced := waker != nil && iv.wakerTID != th.tid
	// An outside process, or one hopped into, waiting for work (a backend
	// idle in a transaction, awaiting its client's next statement) is where
	// the chain ends: its client's doings are no part of the target's wait.
	// Nor does a wait for work go on into the process outside that brought
	// it (a server's poll ended by its client's request: the client's doings
	// before it sent are no part of the server's time).
	idleOutsider := iv.forWork && (w.hopped(th) || waker != nil && waker.outside)
	if traced && pathPolicy.follow[iv.edge] && depth < pathPolicy.maxDepth && waker.walking == 0 && !idleOutsider {
		w.link(th, waker, iv.reason, iv.object, a, b, depth)
		if hop := w.hopInto(th, waker, iv, a, b); hop != nil {
			// What the process or holder did meanwhile is the path, and
			// where it was itself idle (asleep while it held the lock)
			// the wait stays this hop's, blocked by it.
			saved := w.hop
			w.hop = hop
			defer func() { w.hop = saved }()
		}
		w.walk(waker.tid, a, b, depth+1)
		return
	}
	if pathPolicy.lookThrough[iv.reason] && depth < pathPolicy.maxDepth {
		// A poller sleeping on a timer while other traced threads work, or a
		// wait for children that did not end while capture watched: the
		// work is the path, not the wait.
		if busy := w.busiest(th, a, b); busy != nil {
			// Only while it lived: after its exit the wait is explained
			// again (by another thread, or as the sleeper's own), never as
			// CPU of a thread that was gone.
			end := b
			if busy.died != 0 && busy.died < b {
				end = max(a, busy.died)
				w.wait(th, iv, end, b, depth) // the later part first: the walk goes back in time
			}
			w.link(th, busy, iv.reason, "", a, end, depth)
			w.walk(busy.tid, a, end, depth+1)
			return
		}
	}
	var by *pathInterval
	if !traced && iv.wakerPID != 0 && pathPolicy.heldUpBy[iv.edge] {
		by = iv // blocked by a process outside the target
	}
	w.add(th, ownReason(iv), a, b, &pathSegmentInfo{object: iv.object, by: by})
}

type pathSegmentInfo struct {
	object string
	by     *pathInterval
}

// busiest is the target's thread, off the walk's stack, that worked most in
// [a, b] (pathPolicy.working), if it worked enough of that time
// (busyEnough), for a sleeping thread of the target. An outside
// process's sleep has none: it is not polling on the work of the target's
// threads (a server asleep in its handler while its Go client's runtime
// threads spin), and its own threads' waits are known only in part (peers'
// history), so a thread of it seen in no wait is not known to be busy.
func (w *pathWalker) busiest(sleeper *pathThread, a, b uint64) *pathThread {
	if sleeper.outside {
		return nil
	}
	var best *pathThread
	var bestBusy uint64
	for th := range w.lives().alive(a, b) {
		if th == sleeper || th.walking > 0 || th.outside {
			continue
		}
		busy, alive := th.busyIn(a, b)
		if !alive {
			continue
		}
		if busy > bestBusy || (busy == bestBusy && best != nil && th.tid < best.tid) {
			best, bestBusy = th, busy
		}
	}
	if !busyEnough(bestBusy, b-a) {
		return nil
	}
	return best
}

// busyIn is how long th worked in [a, b] (see busiest), and whether it was
// alive then at all.
func (th *pathThread) busyIn(a, b uint64) (busy uint64, alive bool) {
	if (th.born != 0 && th.born >= b) || (th.died != 0 && th.died <= a) {
		return 0, false
	}
	lo, hi := max(a, th.born), b
	if th.died != 0 {
		hi = min(hi, th.died)
	}
	if hi <= lo {
		return 0, false
	}
	busy = hi - lo
	i := sort.Search(len(th.offs), func(i int) bool { return th.offs[i].end > lo })
	for ; i < len(th.offs) && th.offs[i].start < hi; i++ {
		iv := th.offs[i]
		if !pathPolicy.working[iv.reason] || iv.forWork {
			busy -= min(iv.end, hi) - max(iv.start, lo)
		}
	}
	return busy, true
}

func (w *pathWalker) link(waiter, worker *pathThread, reason, object string, a, b uint64, depth int) {
	l := Link{WaiterTID: waiter.tid, WaiterComm: waiter.comm, Reason: reason, WorkerTID: worker.tid,
		WorkerComm: worker.comm, Object: object, WorkerPID: worker.pid}
	if worker.outside {
		l.WorkerRole = RoleOutside
	}
	w.links = append(w.links, pathLinkSpan{Link: l, a: a, b: b, depth: depth})
}

// add records a segment; walking goes backwards, so it merges with the
// segment after it when they are the same.
func (w *pathWalker) add(th *pathThread, reason string, a, b uint64, info *pathSegmentInfo) {
	if b <= a {
		return
	}
	seg := Segment{PID: th.pid, TID: th.tid, Comm: th.comm, Reason: reason,
		BeginS: float64(a-w.begin) / 1e9, DurS: float64(b-a) / 1e9}
	if info != nil {
		seg.Object = info.object
		if info.by != nil {
			seg.BlockedByPID, seg.BlockedByComm = info.by.wakerPID, info.by.wakerComm
		}
	}
	if th.outside {
		seg.Role = RoleOutside
	}
	if w.hop != nil && w.hopped(th) {
		w.hopSegment(&seg)
	}
	if n := len(w.segs); n > 0 {
		last := &w.segs[n-1]
		if last.TID == seg.TID && last.Reason == seg.Reason && last.Object == seg.Object && last.Role == seg.Role &&
			last.BlockedByPID == seg.BlockedByPID && last.BlockedByTID == seg.BlockedByTID && seg.BeginS+seg.DurS >= last.BeginS-1e-9 {
			last.DurS += last.BeginS - seg.BeginS
			last.BeginS = seg.BeginS
			return
		}
	}
	w.segs = append(w.segs, seg)
}

func (w *pathWalker) result() Path {
	p := Path{ByReason: map[string]float64{}}
	if len(w.segs) > 0 {
		p.Segments = make([]Segment, 0, len(w.segs)) // nil when empty: JSON null
	}
	for i := len(w.segs) - 1; i >= 0; i-- {
		s := w.segs[i]
		p.Segments = append(p.Segments, s)
		p.ByReason[s.Reason] += s.DurS
	}
	// The chain: hand-offs around the longest segment of the largest reason.
	top, topS := "", 0.0
	for r, v := range p.ByReason {
		if r != string(event.ReasonIdle) && (v > topS || v == topS && r < top) {
			top, topS = r, v
		}
	}
	var longest *Segment
	for i := range p.Segments {
		s := &p.Segments[i]
		if s.Reason == top && (longest == nil || s.DurS > longest.DurS) {
			longest = s
		}
	}
	if longest != nil {
		mid := w.begin + uint64((longest.BeginS+longest.DurS/2)*1e9)
		var chain []pathLinkSpan
		for _, l := range w.links {
			if l.a <= mid && mid < l.b {
				chain = append(chain, l)
			}
		}
		sort.Slice(chain, func(i, j int) bool { return chain[i].depth < chain[j].depth })
		for _, l := range chain {
			p.Chain = append(p.Chain, l.Link)
		}
	}
	return p
}
