package critpath

import (
	"math/rand/v2"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// naiveBusiest is busiest as it was before the index of lives: every
// thread looked at for every span. It also counts the threads as busy as
// the one it picks.
func naiveBusiest(w *pathWalker, tid uint32, a, b uint64) (*pathThread, int) {
	var best *pathThread
	var bestBusy uint64
	tied := 0
	for _, th := range w.threads {
		if th.tid == tid || th.walking > 0 {
			continue
		}
		busy, alive := th.busyIn(a, b)
		if !alive {
			continue
		}
		if busy == bestBusy {
			tied++
		}
		if busy > bestBusy {
			tied = 1
		}
		if busy > bestBusy || (busy == bestBusy && best != nil && th.tid < best.tid) {
			best, bestBusy = th, busy
		}
	}
	if bestBusy*4 < b-a {
		return nil, 0
	}
	return best, tied
}

// randomWalker makes n threads over [0, span): lives that overlap, begin
// before the window (born 0) or outlive it (died 0), waits of every kind,
// and twins (the same life and waits under another tid) so that ties in
// busy time are common. Sleepy threads mostly wait, so that often none is
// busy enough.
func randomWalker(r *rand.Rand, n int, span uint64, sleepy bool) *pathWalker {
	reasons := []string{string(event.ReasonRunqueue), string(event.ReasonDiskRead), string(event.ReasonNetwork),
		string(event.ReasonSleep), string(event.ReasonLock), string(event.ReasonChild), "other"}
	w := &pathWalker{graph: &graph{threads: map[uint32]*pathThread{}}}
	var prev *pathThread
	for i := range n {
		tid := uint32(1000 + i)
		th := &pathThread{pid: tid, tid: tid}
		if prev != nil && r.IntN(4) == 0 {
			th.born, th.died, th.offs = prev.born, prev.died, prev.offs
		} else {
			if r.IntN(5) > 0 {
				th.born = 1 + r.Uint64N(span-1)
			}
			if r.IntN(5) > 0 {
				th.died = max(th.born, 1) + r.Uint64N(span-max(th.born, 1))
			}
			end := span
			if th.died != 0 {
				end = th.died
			}
			gap := span / 50
			if sleepy {
				gap = span / 5000
			}
			for t := th.born; t < end; {
				start := t + r.Uint64N(gap+1)
				stop := min(start+r.Uint64N(span/20+1), end)
				if start >= stop {
					break
				}
				reason := reasons[r.IntN(len(reasons))]
				if sleepy && r.IntN(10) > 0 {
					reason = string(event.ReasonSleep)
				}
				th.offs = append(th.offs, pathInterval{start: start, end: stop, reason: reason, forWork: r.IntN(10) == 0})
				t = stop
			}
		}
		if r.IntN(20) == 0 {
			th.walking = 1
		}
		w.threads[tid] = th
		prev = th
	}
	return w
}

// TestBusiestIndexed: the index of lives finds the thread the scan of every
// thread found, ties (the lowest tid) and none-busy-enough included.
func TestBusiestIndexed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const span = 2000 // coarse, so that spans often begin or end where lives do
	var found, none, ties int
	for round := range 20 {
		w := randomWalker(r, 10+round*20, span, round%2 == 0)
		for i := range 500 {
			if i == 250 && round%4 == 1 {
				// A thread added once the index is made (requests add the
				// request's thread): always busy, so often the answer.
				w.threads[999] = &pathThread{pid: 999, tid: 999}
			}
			a := r.Uint64N(span)
			b := a + 1 + r.Uint64N(span-a)
			switch r.IntN(10) {
			case 0:
				a, b = 0, span // the whole window, as a poller's sleep can be
			case 1:
				b = a + 1 + r.Uint64N(3) // short: a thread living one unit of it can be the answer
			}
			tid := uint32(1000 + r.IntN(len(w.threads)-1))
			want, tied := naiveBusiest(w, tid, a, b)
			got := w.busiest(w.threads[tid], a, b)
			if got != want {
				t.Fatalf("round %d: busiest(%d, [%d, %d]) = %v, the scan finds %v", round, tid, a, b, tidOf(got), tidOf(want))
			}
			switch {
			case want == nil:
				none++
			case tied > 1:
				ties++
			default:
				found++
			}
		}
	}
	if found < 1000 || none < 100 || ties < 1000 {
		t.Errorf("cases: %d found, %d none busy enough, %d ties: the test no longer covers them", found, none, ties)
	}
}

func tidOf(th *pathThread) any {
	if th == nil {
		return nil
	}
	return th.tid
}
