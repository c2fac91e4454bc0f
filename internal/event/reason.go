package event

// Reason is why a thread was not running: the fixed vocabulary of text and JSON output.
type Reason string

const (
	ReasonCPU           Reason = "cpu"
	ReasonRunqueue      Reason = "runqueue"
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

// Reasons lists the vocabulary in report order.
var Reasons = []Reason{ReasonCPU, ReasonRunqueue, ReasonDiskRead, ReasonDiskWrite, ReasonDirtyThrottle,
	ReasonSync, ReasonNetwork, ReasonLock, ReasonSleep, ReasonChild, ReasonIPC, ReasonOther}

// Disk reports whether the reason is waiting on storage in any form.
func (r Reason) Disk() bool {
	return r == ReasonDiskRead || r == ReasonDiskWrite || r == ReasonDirtyThrottle || r == ReasonSync
}
