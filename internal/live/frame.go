package live

import (
	"github.com/whyslow/whyslow/internal/event"
)

// Frame is what happened over one interval, system-wide: where each
// process's wall time went, the devices, the files, dirty pages and
// writeback. Times are nanoseconds within the interval; Start and End are
// CLOCK_MONOTONIC.
type Frame struct {
	Start, End uint64
	Procs      map[uint32]*Proc
	Devices    map[uint32]*Device
	Files      map[event.FileRef]*FileStat
	// Names holds what the objects of this frame are called: file paths,
	// socket peers, device names. Each is already made safe for a terminal.
	Names  map[Object]string
	System System
	// Events counts the decoded events of the interval by kind; Lost is the
	// engine's lost-event counters (cumulative) when the frame was cut.
	Events map[string]uint64
	Lost   map[string]uint64
}

// Seconds is the interval's length.
func (f *Frame) Seconds() float64 { return float64(f.End-f.Start) / 1e9 }

// Proc is one process over an interval.
type Proc struct {
	PID    uint32
	Comm   string
	Cgroup string
	Times
	Threads map[uint32]*Thread
	// Dirtied: bytes of page cache it dirtied. WrittenBack: bytes of data it
	// dirtied (now or earlier) that the flushers wrote out. DiskRead,
	// DiskWritten: block requests it issued itself.
	Dirtied, WrittenBack  uint64
	DiskRead, DiskWritten uint64
	// Throttled: balance_dirty_pages pauses the kernel imposed on it.
	Throttled uint64
}

// Thread is one thread over an interval.
type Thread struct {
	TID  uint32
	Comm string
	Times
}

// Times is where wall time went: on CPU, and off CPU by reason, with the
// objects waited on.
type Times struct {
	CPU  uint64
	Wait map[event.Reason]uint64
	// On is the waits (ns) whose object is known, by object.
	On map[Object]uint64
}

// Object is what a wait was on: a file or socket, or else a device.
type Object struct {
	File event.FileRef
	Dev  uint32
}

// Lost is the wall time lost waiting for a shared resource: a CPU, the
// disk, dirty-page throttling, a sync. Waits for work (sleep, poll, futex,
// network, pipes, children) are not in it: an idle daemon would rank first.
func (t *Times) Lost() uint64 {
	var n uint64
	for _, r := range LostReasons {
		n += t.Wait[r]
	}
	return n
}

// LostReasons are the reasons counted as wall time lost: a CPU, a
// cgroup's CPU quota, memory reclaim, the disk, dirty-page throttling, a sync.
var LostReasons = []event.Reason{event.ReasonRunqueue, event.ReasonCPUQuota, event.ReasonMemory,
	event.ReasonDiskRead, event.ReasonDiskWrite, event.ReasonDirtyThrottle, event.ReasonSync}

// Add adds o's times to t's (a cgroup's, from its processes').
func (t *Times) Add(o *Times) {
	t.CPU += o.CPU
	for r, ns := range o.Wait {
		if t.Wait == nil {
			t.Wait = map[event.Reason]uint64{}
		}
		t.Wait[r] += ns
	}
	for obj, ns := range o.On {
		if t.On == nil {
			t.On = map[Object]uint64{}
		}
		t.On[obj] += ns
	}
}

// Top returns the object waited on the longest, and for how long.
func (t *Times) Top() (Object, uint64) {
	var best Object
	var most uint64
	for o, ns := range t.On {
		if ns > most || (ns == most && less(o, best)) {
			best, most = o, ns
		}
	}
	return best, most
}

func less(a, b Object) bool {
	if a.File.Dev != b.File.Dev {
		return a.File.Dev < b.File.Dev
	}
	if a.File.Ino != b.File.Ino {
		return a.File.Ino < b.File.Ino
	}
	return a.Dev < b.Dev
}

// Device is one block device over an interval, from its requests.
type Device struct {
	Dev                   uint32
	Name                  string
	Reads, Writes         uint64 // requests completed
	ReadBytes, WriteBytes uint64
	// AwaitNS sums, over completed requests, insert (or issue) to completion.
	ReadAwaitNS, WriteAwaitNS uint64
	// Latencies are the read and write requests' await times, for histograms.
	ReadLatencies, WriteLatencies []uint64
	// BusyNS is the time the device had requests in flight (/proc/diskstats).
	BusyNS uint64
}

// FileStat is one file over an interval: time waited on it, bytes read and
// written by syscalls, pages dirtied in it, and its block I/O.
type FileStat struct {
	Ref                   event.FileRef
	Waited                uint64
	Read, Written         uint64
	Dirtied               uint64
	DiskRead, DiskWritten uint64
}

// System is what /proc says of the whole machine when the frame was cut.
type System struct {
	DirtyBytes, WritebackBytes uint64
	// PSI: share of the last 10 s some (or all) tasks were stalled, per
	// resource ("cpu", "io", "memory"); absent when the kernel has no PSI.
	PSI map[string]PSI
}

// PSI is one resource's pressure.
type PSI struct{ Some10, Full10 float64 }
