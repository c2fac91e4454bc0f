package explain

import (
	"sort"

	"github.com/whyslow/whyslow/internal/analysis/critpath"
	"github.com/whyslow/whyslow/internal/event"
)

// Coverage checks an answer against the time it was asked about: the
// critical path must cover the wall time, and its CPU must be CPU the
// kernel measured. The walk calls a thread's time between two waits it saw
// "cpu"; when a wait went unrecorded (lost, or a thread the capture
// followed only in part), that stretch would read as CPU the thread never
// used. The thread's own on-CPU time (its wait slot's accounting, exact
// whatever was lost) tells them apart.
type Coverage struct {
	// WallS is the time asked about; PathS what the critical path's
	// segments add up to (the same, to the walk's rounding).
	WallS float64 `json:"wall_s"`
	PathS float64 `json:"path_s"`
	// UnaccountedS is the path's CPU its threads were not measured running:
	// time the recording cannot explain. The verdict built on it may be
	// incomplete.
	UnaccountedS float64 `json:"unaccounted_s"`
	// Threads are the target's threads with unaccounted time, most first.
	Threads []UnaccountedThread `json:"threads"`
}

// UnaccountedThread is a thread whose time on the path as CPU exceeds its
// measured CPU time.
type UnaccountedThread struct {
	PID          uint32  `json:"pid"`
	TID          uint32  `json:"tid"`
	Comm         string  `json:"comm"`
	PathCPUS     float64 `json:"path_cpu_s"`
	OnCPUS       float64 `json:"on_cpu_s"`
	UnaccountedS float64 `json:"unaccounted_s"`
}

// Unaccounted's tolerance: the on-CPU time of a thread is read in slices
// (each second, and at its exit), so a few milliseconds of it can fall
// outside the window the path covers.
const (
	unaccountedMinS  = 0.010
	unaccountedShare = 0.05
)

// Covered says whether the answer covers the time asked about: the path
// adds up to the wall time within 1%, and no more than 1% of it is
// unaccounted.
func (c Coverage) Covered() bool {
	tol := 0.01 * c.WallS
	return c.PathS >= c.WallS-tol && c.PathS <= c.WallS+tol && c.UnaccountedS <= tol
}

// coverage checks the path of a process's window against its threads' CPU.
func (x *Explanation) coverage() {
	x.Coverage = pathCoverage(x.Path, x.WallS, x.Threads)
}

// pathCoverage is Coverage for path over wall seconds, its threads' CPU
// time measured in threads.
func pathCoverage(path critpath.Path, wall float64, threads []ThreadTime) Coverage {
	c := Coverage{WallS: wall, Threads: []UnaccountedThread{}}
	pathCPU := map[uint32]float64{}
	for _, s := range path.Segments {
		c.PathS += s.DurS
		if s.Reason == string(event.ReasonCPU) && s.Role == "" {
			pathCPU[s.TID] += s.DurS
		}
	}
	for _, th := range threads {
		cpu, ok := pathCPU[th.TID]
		if !ok {
			continue
		}
		excess := cpu - th.OnCPUS
		if excess <= unaccountedMinS+unaccountedShare*cpu {
			continue
		}
		c.UnaccountedS += excess
		c.Threads = append(c.Threads, UnaccountedThread{PID: th.PID, TID: th.TID, Comm: th.Comm,
			PathCPUS: cpu, OnCPUS: th.OnCPUS, UnaccountedS: excess})
	}
	sort.Slice(c.Threads, func(i, j int) bool {
		a, b := c.Threads[i], c.Threads[j]
		return a.UnaccountedS > b.UnaccountedS || a.UnaccountedS == b.UnaccountedS && a.TID < b.TID
	})
	return c
}
