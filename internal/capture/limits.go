package capture

import (
	"os"
	"sync"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// limits notes the cgroup limits that may have held the target up, read
// from /proc and the cgroup's files while its process is there, and again
// at the end of the capture, so that a verdict can name the cgroup, its
// limit, and what the kernel counted in between:
//   - the CPU quota of each cgroup whose tasks the kernel held off the CPU
//     (a wait with Quota set), read at the first such wait of a process;
//   - the memory limit of each limited cgroup whose tasks waited
//     uninterruptibly (disk reads among them), read at the first such wait:
//     its refaults are file pages read again after its reclaim evicted them;
//   - at that wait too, the I/O limits of the process's own cgroup.
//
// A process found in no limited cgroup at an uninterruptible wait is asked
// again at one a second later, not at each: a process moving itself into
// a cgroup waits uninterruptibly in the move (the kernel's RCU grace period,
// ~20 ms), and read at that wait it was still outside.
type limits struct {
	mu       sync.Mutex
	quotaPID map[uint32]bool
	quotas   map[string]noted[sysinfo.CPUQuota] // by cgroup path: its first reading
	memPID   asked
	ioPID    asked
	memories map[string]noted[sysinfo.MemoryLimit]
}

// asked says of each process whether its limit of one kind was found, and
// when one found unlimited is to be asked again.
type asked struct {
	found map[uint32]bool
	again map[uint32]uint64
}

// due says whether pid's limit is to be read at a wait at time t.
func (a *asked) due(pid uint32, t uint64) bool {
	return !a.found[pid] && t >= a.again[pid]
}

// answered notes what reading pid's limit at time t found.
func (a *asked) answered(pid uint32, t uint64, found bool) {
	if a.found == nil {
		a.found, a.again = map[uint32]bool{}, map[uint32]uint64{}
	}
	if found {
		a.found[pid] = true
		delete(a.again, pid)
	} else {
		a.again[pid] = t + unlimitedAgainNS
	}
}

// unlimitedAgainNS is how long a process found in no limited cgroup is not
// asked again.
const unlimitedAgainNS = uint64(1e9)

// noted is a cgroup's first reading and the header of the wait that made
// it due: a reading again stands for the same process.
type noted[T any] struct {
	h       event.Header
	reading T
}

// ioLimitEvents are pid's own cgroup's I/O limits, one event a device.
func ioLimitEvents(h event.Header, pid uint32) []event.Event {
	var out []event.Event
	for _, l := range sysinfo.Host.IOLimits(pid) {
		out = append(out, &event.IOLimit{Header: h, Cgroup: event.EncodeText(l.Cgroup), Version: l.Version, Dev: l.Dev,
			ReadBPS: l.ReadBPS, WriteBPS: l.WriteBPS, ReadIOPS: l.ReadIOPS, WriteIOPS: l.WriteIOPS})
	}
	return out
}

// seen returns the readings a wait makes due: its process's CPU quota at
// its first throttled wait, its memory and I/O limits at its first
// uninterruptible one that finds them (nil each when read already,
// unlimited, or unreadable; asked again a second later when not found).
func (l *limits) seen(o *event.OffCPU) []event.Event {
	if !o.Quota && o.State != 'D' {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.quotaPID == nil {
		l.quotaPID, l.quotas = map[uint32]bool{}, map[string]noted[sysinfo.CPUQuota]{}
		l.memories = map[string]noted[sysinfo.MemoryLimit]{}
	}
	h := event.Header{Time: o.Time, PID: o.PID, TID: o.TID, Comm: o.Comm}
	var out []event.Event
	if o.Quota && !l.quotaPID[o.PID] {
		l.quotaPID[o.PID] = true
		if c, ok := sysinfo.Host.CPUQuota(o.PID); ok {
			if _, known := l.quotas[c.Cgroup]; !known {
				l.quotas[c.Cgroup] = noted[sysinfo.CPUQuota]{h, c}
			}
			out = append(out, quotaEvent(h, event.QuotaFirst, c))
		}
	}
	if o.State != 'D' {
		return out
	}
	if l.ioPID.due(o.PID, o.Time) {
		io := ioLimitEvents(h, o.PID)
		out = append(out, io...)
		l.ioPID.answered(o.PID, o.Time, len(io) > 0)
	}
	if l.memPID.due(o.PID, o.Time) {
		m, ok := sysinfo.Host.MemoryLimit(o.PID)
		limited := ok && (m.LimitBytes > 0 || m.HighBytes > 0)
		if limited {
			if _, known := l.memories[m.Cgroup]; !known {
				l.memories[m.Cgroup] = noted[sysinfo.MemoryLimit]{h, m}
			}
			out = append(out, memoryEvent(h, event.QuotaFirst, m))
		}
		l.memPID.answered(o.PID, o.Time, limited)
	}
	return out
}

// end reads each cgroup noted again, at now, in its directory (its
// processes may be gone): its counts then. A cgroup removed since has no
// end.
func (l *limits) end(now uint64) []event.Event {
	return l.read(now, event.QuotaEnd)
}

// read reads each cgroup noted again, at now, as phase: an end has no
// process; a first reading made again stands for the process of the first.
func (l *limits) read(now uint64, phase string) []event.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	header := func(h event.Header) event.Header {
		if phase == event.QuotaEnd {
			return event.Header{Time: now}
		}
		h.Time = now
		return h
	}
	var out []event.Event
	for _, first := range l.quotas {
		if c, ok := sysinfo.Host.ReadCPUQuota(first.reading); ok {
			out = append(out, quotaEvent(header(first.h), phase, c))
		}
	}
	for _, first := range l.memories {
		if m, ok := sysinfo.Host.ReadMemoryLimit(first.reading); ok {
			out = append(out, memoryEvent(header(first.h), phase, m))
		}
	}
	return out
}

func quotaEvent(h event.Header, phase string, c sysinfo.CPUQuota) *event.CPUQuota {
	return &event.CPUQuota{Header: h, Phase: phase, Cgroup: event.EncodeText(c.Cgroup), Version: c.Version,
		QuotaUS: c.QuotaUS, PeriodUS: c.PeriodUS, Periods: c.Periods, Throttled: c.Throttled, ThrottledNS: c.ThrottledNS}
}

var pageSize = uint64(os.Getpagesize())

func memoryEvent(h event.Header, phase string, m sysinfo.MemoryLimit) *event.MemoryLimit {
	return &event.MemoryLimit{Header: h, Phase: phase, Cgroup: event.EncodeText(m.Cgroup), Version: m.Version,
		LimitBytes: m.LimitBytes, HighBytes: m.HighBytes, RefaultBytes: m.RefaultPages * pageSize}
}
