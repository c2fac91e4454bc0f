package event

// Reason is why a thread was not running: the fixed vocabulary of text and JSON output.
type Reason string

const (
	ReasonCPU      Reason = "cpu"
	ReasonRunqueue Reason = "runqueue"
	// ReasonCPUQuota: runnable, but held off the CPU by its cgroup's CPU
	// quota (a container's --cpus, a systemd unit's CPUQuota).
	ReasonCPUQuota Reason = "cpu-quota"
	// ReasonMemory: waiting in memory reclaim (direct, or at a memory
	// cgroup's limit) or throttled above a cgroup's memory.high.
	ReasonMemory        Reason = "memory"
	ReasonDiskRead      Reason = "disk-read"
	ReasonDiskWrite     Reason = "disk-write"
	ReasonDirtyThrottle Reason = "dirty-throttle"
	ReasonSync          Reason = "sync"
	ReasonNetwork       Reason = "network"
	ReasonLock          Reason = "lock"
	ReasonSleep         Reason = "sleep"
	ReasonChild         Reason = "child"
	ReasonIPC           Reason = "ipc"
	ReasonOther         Reason = "other"
)

// ReasonIdle is time a thread waited for work that had not come (accept, a
// server's poll with no request): no slowness of its own. No wait is
// classified so (classify never gives it): the analyses derive it from the
// waits around (for_work in internal/analysis/source/sql/macros.sql), and
// it takes the wait's reason's place in their output.
const ReasonIdle Reason = "idle"

// Reasons lists the vocabulary in report order: every reason a wait can be
// classified as, then idle, the one the analyses derive (Derived).
var Reasons = []Reason{ReasonCPU, ReasonRunqueue, ReasonCPUQuota, ReasonMemory, ReasonDiskRead, ReasonDiskWrite, ReasonDirtyThrottle,
	ReasonSync, ReasonNetwork, ReasonLock, ReasonSleep, ReasonChild, ReasonIPC, ReasonOther, ReasonIdle}

// Derived reports whether no wait is classified so: the analyses tell it
// from the waits around (idle).
func (r Reason) Derived() bool { return r == ReasonIdle }

// Disk reports whether the reason is waiting on storage in any form.
func (r Reason) Disk() bool {
	return r == ReasonDiskRead || r == ReasonDiskWrite || r == ReasonDirtyThrottle || r == ReasonSync
}

// LostRebuilt is the lost source (the recording's `lost` table) of context
// switches the kernel did not report: each wait was rebuilt from the
// thread's own CPU time (bpf/sched.bpf.h), so nothing of the thread's time
// is missing. Counted apart from the events lost.
const LostRebuilt = "unseen_wait"
