package critpath

import (
	"iter"
	"math"
	"sort"
)

// liveIndex finds the threads alive in a span of time without looking at
// the others. busiest asks it at every timer sleep and unfinished child wait
// the critical path walks: a parallel build has thousands of threads, most
// of them short-lived compilers, and scanning them all at each of thousands
// of waits was most of the time an explanation of a build took.
//
// Threads are sorted by birth, so those born before a span's end are a
// prefix; over that order a tree keeps the latest death below each node,
// so the walk skips whole runs of threads dead before the span begins.
type liveIndex struct {
	byBirth []*pathThread
	// lastDeath is a complete binary tree over byBirth, leaves from index
	// leaves: each node the latest death among its leaves (never: MaxUint64).
	lastDeath []uint64
	leaves    int
}

func newLiveIndex(threads map[uint32]*pathThread) *liveIndex {
	ix := &liveIndex{byBirth: make([]*pathThread, 0, len(threads))}
	for _, th := range threads {
		ix.byBirth = append(ix.byBirth, th)
	}
	sort.Slice(ix.byBirth, func(i, j int) bool {
		a, b := ix.byBirth[i], ix.byBirth[j]
		return a.born < b.born || a.born == b.born && a.tid < b.tid
	})
	ix.leaves = 1
	for ix.leaves < len(ix.byBirth) {
		ix.leaves *= 2
	}
	ix.lastDeath = make([]uint64, 2*ix.leaves)
	for i, th := range ix.byBirth {
		ix.lastDeath[ix.leaves+i] = deathOf(th)
	}
	for n := ix.leaves - 1; n > 0; n-- {
		ix.lastDeath[n] = max(ix.lastDeath[2*n], ix.lastDeath[2*n+1])
	}
	return ix
}

// deathOf is when th exited; one that did not exit in the window (died 0)
// outlives every span.
func deathOf(th *pathThread) uint64 {
	if th.died == 0 {
		return math.MaxUint64
	}
	return th.died
}

// alive yields every thread born before b (or before the window: born 0)
// that had not died by a, in no particular order. busiest tests each one
// again: the index only spares it the rest.
func (ix *liveIndex) alive(a, b uint64) iter.Seq[*pathThread] {
	// Born 0 sorts first and counts as born before any b.
	bornBefore := sort.Search(len(ix.byBirth), func(i int) bool {
		th := ix.byBirth[i]
		return th.born != 0 && th.born >= b
	})
	return func(yield func(*pathThread) bool) {
		ix.visit(1, 0, ix.leaves, bornBefore, a, yield)
	}
}

// visit walks node n, which covers leaves [lo, hi), yielding the leaves
// under end whose death is after a. It returns false once yield has.
func (ix *liveIndex) visit(n, lo, hi, end int, a uint64, yield func(*pathThread) bool) bool {
	if lo >= end || ix.lastDeath[n] <= a {
		return true
	}
	if hi-lo == 1 {
		return yield(ix.byBirth[lo])
	}
	mid := (lo + hi) / 2
	return ix.visit(2*n, lo, mid, end, a, yield) && ix.visit(2*n+1, mid, hi, end, a, yield)
}
