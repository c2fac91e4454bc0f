package critpath

import (
	"database/sql"
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// graph is what the walk moves on: the threads (the nodes: a thread runs
// between its off-CPU intervals) and, for each interval, the edge that
// ended it (edge.go), from the waker's work into the waiter. It is built
// from the recording once per window (Load): the target's threads and
// waits; a process outside the target is added when a walk first reaches
// it (reach), its waits read then. The walk (walker.go) asks the graph for
// threads and never loads one itself.
type graph struct {
	threads map[uint32]*pathThread
	// src and win: where and when the outside processes' waits are read;
	// reached lists those read.
	src     *source.Source
	win     source.Window
	reached map[uint32]bool
	// live finds the threads alive in a span, for busiest (lives).
	live  *liveIndex
	waits int // intervals loaded
}

func (g *graph) load(s *source.Source, win source.Window) error {
	if s.HasRows("offcpu_raw") {
		if err := g.loadWaits(s, win); err != nil {
			return err
		}
	}
	return g.loadThreads(s, win)
}

// loadWaits reads the target's off-CPU intervals.
//
// Rows come by thread, so the intervals go into one slice and each thread
// takes its run of it: a slice per thread, grown row by row, was a sixth of
// the load on a build's 77k waits over 1300 threads. Names are left to
// loadThreads, which gives every thread its latest: a thread it does not
// name never had one here either.
func (g *graph) loadWaits(s *source.Source, win source.Window) error {
	var count int
	if err := s.QueryRow(`SELECT count(*) FROM target_offcpu`).Scan(&count); err != nil {
		return fmt.Errorf("reading waits for the critical path: %w", err)
	}
	rows, err := s.Query(sqlOf("path_waits"))
	if err != nil {
		return fmt.Errorf("reading waits for the critical path: %w", err)
	}
	defer rows.Close()
	all := make([]pathInterval, 0, count)
	var th *pathThread
	first := 0 // th's first interval in all
	for rows.Next() {
		var pid, tid uint32
		var iv pathInterval
		if err := rows.Scan((*scanU32)(&pid), (*scanU32)(&tid), (*scanU64)(&iv.start), (*scanU64)(&iv.end),
			(*scanU64)(&iv.runq), &iv.reason, (*scanU32)(&iv.wakerPID), (*scanU32)(&iv.wakerTID), &iv.wakerComm,
			&iv.object, &iv.forWork, &iv.wakerOnSocket); err != nil {
			return err
		}
		if th == nil || tid != th.tid {
			th, first = g.thread(pid, tid, ""), len(all)
		}
		iv.start = max(iv.start, win.Begin)
		iv.end = min(iv.end, win.End)
		iv.runq = min(iv.runq, iv.end-iv.start)
		if n := len(all); n > first && all[n-1].end > iv.start {
			iv.start = all[n-1].end // overlapping rows (a wait begun before capture): keep time once
			if iv.start >= iv.end {
				continue
			}
			iv.runq = min(iv.runq, iv.end-iv.start)
		}
		iv.edge = edgeOf(&iv)
		all = append(all, iv)
		th.offs = all[first:len(all):len(all)]
	}
	g.waits = len(all)
	return rows.Err()
}

// loadThreads reads the target's threads, those that never went off CPU
// too: births and deaths, names.
func (g *graph) loadThreads(s *source.Source, win source.Window) error {
	rows, err := s.Query(sqlOf("path_threads"))
	if err != nil {
		return fmt.Errorf("reading threads for the critical path: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid, tid uint32
		var comm string
		var born, died sql.NullInt64
		var parent sql.NullInt64
		if err := rows.Scan(&pid, &tid, &comm, &born, &parent, &died); err != nil {
			return err
		}
		th := g.thread(pid, tid, comm)
		th.comm = comm
		if born.Valid && uint64(born.Int64) > win.Begin {
			th.born, th.parent = uint64(born.Int64), uint32(parent.Int64)
		}
		if died.Valid && uint64(died.Int64) < win.End {
			th.died = uint64(died.Int64)
		}
	}
	return rows.Err()
}

func (g *graph) thread(pid, tid uint32, comm string) *pathThread {
	th := g.threads[tid]
	if th == nil {
		th = &pathThread{pid: pid, tid: tid, comm: comm}
		g.threads[tid] = th
	}
	return th
}

// reach loads the waits of process pid, outside the target, the first time
// the walk reaches it, and returns its thread tid (nil: the recording holds
// no wait of that process, and the path stops at it).
func (g *graph) reach(pid, tid uint32) *pathThread {
	if g.src == nil {
		return nil
	}
	if g.reached == nil {
		g.reached = map[uint32]bool{}
	}
	if !g.reached[pid] {
		g.reached[pid] = true
		if err := g.loadOutside(pid); err != nil {
			return nil // the path stops at the process, as it did before
		}
	}
	th := g.threads[tid]
	if th == nil || !th.outside {
		return nil
	}
	return th
}

// loadOutside reads the waits of an outside process in the window, with the
// reasons the target's would get (target_offcpu), and this for an outside
// process: a poll no task was seen ending timed out (timedOutUnseen).
func (g *graph) loadOutside(pid uint32) error {
	s := g.src
	if !s.HasRows("offcpu_raw") {
		return nil
	}
	rows, err := s.Query(modules.Where("path_outside_waits", PollRuns("SELECT * FROM w")),
		sql.Named("p", pid), sql.Named("b", g.win.Begin), sql.Named("e", g.win.End))
	if err != nil {
		return fmt.Errorf("reading the waits of process %d: %w", pid, err)
	}
	defer rows.Close()
	for rows.Next() {
		var tid uint32
		var comm, state, syscall string
		var iv pathInterval
		if err := rows.Scan(&tid, &comm, (*scanU64)(&iv.start), (*scanU64)(&iv.end), (*scanU64)(&iv.runq), &iv.reason,
			(*scanU32)(&iv.wakerPID), (*scanU32)(&iv.wakerTID), &iv.wakerComm, &iv.object, &iv.forWork,
			&iv.wakerOnSocket, &state, &syscall); err != nil {
			return err
		}
		if timedOutUnseen(&iv, state, syscall) {
			iv.reason = string(event.ReasonSleep)
		}
		iv.edge = edgeOf(&iv)
		th := g.threads[tid]
		if th == nil {
			th = &pathThread{pid: pid, tid: tid, comm: comm, outside: true}
			g.threads[tid] = th
		}
		if !th.outside {
			continue // a target's thread: loaded as the target's
		}
		if comm != "" {
			th.comm = comm
		}
		iv.start = max(iv.start, g.win.Begin)
		iv.end = min(iv.end, g.win.End)
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
	g.live = nil // the index of lives is rebuilt with the new threads
	return nil
}

// lives is the index of the graph's threads' lives, made at the first
// busiest, when they are all loaded and the walk has begun (a thread's birth
// and death no longer change), and made again if a thread was added since:
// requests add each request's thread the recording never saw wait.
func (g *graph) lives() *liveIndex {
	if g.live == nil || len(g.live.byBirth) != len(g.threads) {
		g.live = newLiveIndex(g.threads)
	}
	return g.live
}
