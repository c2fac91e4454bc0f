package procsample

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/whyslow/whyslow/internal/sysinfo"
)

// discover reads the process tree under the target: the target and every
// descendant (/proc/PID/task/TID/children is not in every kernel: the
// parents are read from each process's stat).
func (s *Sampler) discover() {
	s.lastTree = s.tick
	dir, err := os.Open(filepath.Join(s.o.Root, "proc"))
	if err != nil {
		return
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	parent := map[int]int{}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
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
			p.close()
			delete(s.procs, pid)
		}
	}
	for pid := range in {
		if p, ok := s.procs[pid]; ok {
			p.ppid = parent[pid]
			continue
		}
		p := &proc{pid: pid, ppid: parent[pid], tasks: map[int]*task{}, files: map[int32]linked{}}
		p.quota = s.quotaOf(pid)
		s.procs[pid] = p
	}
}

// quota is a cgroup's CPU quota, read again each tick. grew says it
// throttled its tasks lately: its count of throttled periods or its
// throttled time grew within a period (and a tick) of now. Neither says
// "throttled now": the count grows when a period's throttling begins, the
// time when it ends; between the two, ticks see neither grow.
type quota struct {
	q     sysinfo.CPUQuota
	grew  bool
	since uint64 // when growth was last seen, CLOCK_MONOTONIC ns
}

// quotaOf is the quota of pid's cgroup, shared by the processes in it; nil
// when it has none.
func (s *Sampler) quotaOf(pid int) *quota {
	fs := sysinfo.FS{Root: s.o.Root}
	q, ok := fs.CPUQuota(uint32(pid))
	if !ok || q.QuotaUS <= 0 {
		return nil
	}
	if have, ok := s.cgroups[q.Dir]; ok {
		return have
	}
	c := &quota{q: q}
	s.cgroups[q.Dir] = c
	return c
}

// readQuotas reads each quota's cpu.stat once a tick.
func (s *Sampler) readQuotas() {
	fs := sysinfo.FS{Root: s.o.Root}
	for _, c := range s.cgroups {
		now, ok := fs.ReadCPUQuota(c.q)
		if !ok {
			c.grew = false
			continue
		}
		if now.ThrottledNS > c.q.ThrottledNS || now.Throttled > c.q.Throttled {
			c.since = s.now
		}
		window := uint64(now.PeriodUS)*1000 + uint64(s.Interval())
		c.grew = c.since != 0 && s.now-c.since <= window
		c.q = now
	}
}
