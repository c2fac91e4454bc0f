package capture

import (
	"sync"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// quotas notes the CPU quota of each cgroup whose tasks the kernel held off
// the CPU (a wait with Quota set): read from /proc and the cgroup's files at
// the first such wait of a process, while it is there, and again at the end
// of the capture, so that a verdict can name the cgroup, its quota, and
// what the kernel counted of periods throttled and time held off between.
type quotas struct {
	mu   sync.Mutex
	pids map[uint32]bool             // processes whose cgroup was read
	seen map[string]sysinfo.CPUQuota // by cgroup path: its first reading
}

// first returns the quota event for pid's first throttled wait, nil when
// its cgroup was read already or cannot be.
func (q *quotas) first(o *event.OffCPU) event.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pids[o.PID] {
		return nil
	}
	if q.pids == nil {
		q.pids, q.seen = map[uint32]bool{}, map[string]sysinfo.CPUQuota{}
	}
	q.pids[o.PID] = true
	c, ok := sysinfo.Host.CPUQuota(o.PID)
	if !ok {
		return nil
	}
	if _, ok := q.seen[c.Cgroup]; !ok {
		q.seen[c.Cgroup] = c
	}
	return quotaEvent(event.Header{Time: o.Time, PID: o.PID, TID: o.TID, Comm: o.Comm}, event.QuotaFirst, c)
}

// end reads each cgroup noted again, at now, in its directory (its
// processes may be gone): its counts then. A cgroup removed since has no
// end.
func (q *quotas) end(now uint64) []event.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []event.Event
	for _, first := range q.seen {
		if c, ok := sysinfo.Host.ReadCPUQuota(first); ok {
			out = append(out, quotaEvent(event.Header{Time: now}, event.QuotaEnd, c))
		}
	}
	return out
}

func quotaEvent(h event.Header, phase string, c sysinfo.CPUQuota) *event.CPUQuota {
	return &event.CPUQuota{Header: h, Phase: phase, Cgroup: event.EncodeText(c.Cgroup), Version: c.Version,
		QuotaUS: c.QuotaUS, PeriodUS: c.PeriodUS, Periods: c.Periods, Throttled: c.Throttled, ThrottledNS: c.ThrottledNS}
}
