package procsample

import (
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// groups are what a thread's cgroups tell a look: its CPU quota and its
// memory limit's count of reclaims, each shared by the threads in it. A
// thread's own cgroup, read from /proc/PID/task/TID/cgroup when a look
// needs it (a runnable thread that waited for a CPU, a new uninterruptible
// wait): a thread may move, alone, into a cgroup of its own (v1's tasks
// file), as a process may after it started.
type groups struct {
	quota *quota
	mem   *memcg
}

// memcg is a memory cgroup with a limit: its count of the times it was at
// it (sysinfo.MemoryEvents), read at most once a tick when a look asks.
// grew says it was at its limit lately: the count grew within a second.
type memcg struct {
	ev          sysinfo.MemoryEvents
	f           procFile
	count       uint64
	read, since uint64 // the tick last read; when growth was last seen, ns
	grew        bool
}

// groupsOf is the cgroups thread t is in now: its cgroup file read again
// (one pread), the groups looked up by its text.
func (s *Sampler) groupsOf(t *task) *groups {
	b, err := t.readFile(&t.cgroup, "cgroup", s.buf)
	if err != nil || len(b) == 0 {
		return nil
	}
	if t.groups != nil && string(b) == t.cgText {
		return t.groups
	}
	t.cgText = string(b)
	g, ok := s.byCgroups[t.cgText]
	if !ok {
		g = s.newGroups(sysinfo.ParseTaskCgroups(b))
		s.byCgroups[t.cgText] = g
	}
	t.groups = g
	return g
}

func (s *Sampler) newGroups(c sysinfo.TaskCgroups) *groups {
	fs := sysinfo.FS{Root: s.o.Root}
	g := &groups{}
	if q, ok := fs.CPUQuotaIn(c); ok && q.QuotaUS > 0 {
		if have, ok := s.cgroups[q.Dir]; ok {
			g.quota = have
		} else {
			g.quota = &quota{q: q, read: s.tick}
			s.cgroups[q.Dir] = g.quota
		}
	}
	if ev, ok := fs.MemoryEventsIn(c); ok {
		if have, ok := s.memcgs[ev.Path]; ok {
			g.mem = have
		} else if f, err := openProcFile(ev.Path); err == nil {
			g.mem = &memcg{ev: ev, f: f}
			g.mem.count = s.memEvents(g.mem)
			g.mem.read = s.tick
			s.memcgs[ev.Path] = g.mem
		}
	}
	return g
}

func (s *Sampler) memEvents(m *memcg) uint64 {
	b, err := reread(m.f, s.buf)
	if err != nil {
		return m.count
	}
	return sysinfo.ParseMemoryEvents(m.ev.Version, b)
}

// throttled says whether thread t's CPU quota throttled its cgroup lately.
func (s *Sampler) throttled(t *task) bool {
	g := s.groupsOf(t)
	if g == nil || g.quota == nil {
		return false
	}
	return s.readQuota(g.quota)
}

// reclaiming says whether thread t's memory cgroup was at its limit lately
// (its count of reclaims grew within a second): an uninterruptible wait in
// it is likely reclaim's (classify.Sample.Reclaim).
func (s *Sampler) reclaiming(t *task) bool {
	g := s.groupsOf(t)
	if g == nil || g.mem == nil {
		return false
	}
	m := g.mem
	if m.read != s.tick {
		n := s.memEvents(m)
		if n > m.count {
			m.since = s.now
		}
		m.count, m.read = n, s.tick
		m.grew = m.since != 0 && s.now-m.since <= 1e9
	}
	return m.grew
}
