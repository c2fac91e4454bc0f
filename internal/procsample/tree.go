package procsample

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/whyslow/whyslow/internal/sysinfo"
)

// discover reads the process tree under the target: the target and every
// descendant (/proc/PID/task/TID/children is not in every kernel: the
// parents are read from each process's stat). A process's parent is read
// once, when it first appears in a listing: reading every process's stat
// at every listing was a tenth of the sampler's cost on a machine of a few
// hundred processes (BENCHMARKS.md section 10). One reparented since keeps
// its first parent (its work stays the target's).
func (s *Sampler) discover() {
	s.lastTree = s.tick
	dir, err := os.Open(filepath.Join(s.o.Root, "proc"))
	if err != nil {
		return
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	parent := make(map[int]int, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if ppid, ok := s.parents[pid]; ok {
			parent[pid] = ppid
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.o.Root, "proc", n, "stat"))
		if err != nil {
			continue
		}
		st, ok := parseStat(b, "")
		if !ok {
			continue
		}
		parent[pid] = st.PPID
	}
	s.parents = parent
	children := map[int][]int{}
	for pid, ppid := range parent {
		children[ppid] = append(children[ppid], pid)
	}
	in := map[int]bool{}
	queue := []int{s.o.PID}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if in[pid] {
			continue
		}
		if _, ok := parent[pid]; !ok {
			continue
		}
		in[pid] = true
		queue = append(queue, children[pid]...)
	}
	for pid, p := range s.procs {
		if !in[pid] {
			for _, t := range p.tasks {
				s.release(t)
			}
			p.close()
			delete(s.procs, pid)
		}
	}
	for pid := range in {
		if p, ok := s.procs[pid]; ok {
			p.ppid = parent[pid]
			continue
		}
		s.procs[pid] = &proc{pid: pid, ppid: parent[pid], tasks: map[int]*task{}, files: map[int32]linked{}}
	}
}

// quota is a cgroup's CPU quota, its cpu.stat read at most once a tick,
// when a look at a runnable thread in it asks. grew says it throttled its
// tasks lately: its count of throttled periods or its throttled time grew
// within a period (and a tick) of now. Neither says "throttled now": the
// count grows when a period's throttling begins, the time when it ends;
// between the two, ticks see neither grow.
type quota struct {
	q     sysinfo.CPUQuota
	grew  bool
	read  uint64 // the tick it was last read
	since uint64 // when growth was last seen, CLOCK_MONOTONIC ns
}

// readQuota reads quota c's cpu.stat, once a tick, and says whether it grew
// lately.
func (s *Sampler) readQuota(c *quota) bool {
	if c.read == s.tick {
		return c.grew
	}
	c.read = s.tick
	now, ok := sysinfo.FS{Root: s.o.Root}.ReadCPUQuota(c.q)
	if !ok {
		c.grew = false
		return false
	}
	if now.ThrottledNS > c.q.ThrottledNS || now.Throttled > c.q.Throttled {
		c.since = s.now
	}
	window := uint64(now.PeriodUS)*1000 + uint64(s.Interval())
	c.grew = c.since != 0 && s.now-c.since <= window
	c.q = now
	return c.grew
}
