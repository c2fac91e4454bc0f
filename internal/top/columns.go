package top

import (
	"fmt"

	"github.com/whyslow/whyslow/internal/format"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/live"
)

// row is one process (or thread) of a frame, as the table shows it.
type row struct {
	id        uint32 // pid, or tid in thread mode
	comm      string
	cgroup    string
	times     *live.Times
	waitedOn  string // the object waited on the longest
	waitedFor uint64 // and for how long (ns)
	secs      float64
}

// column is one column of the process table: the table, the sort keys and
// the help screen all come from this one list.
type column struct {
	title string
	help  string
	width int
	// priority: when the terminal is narrow, columns with the highest
	// numbers go first.
	priority int
	// share is the column's number (a share of one thread's time), nil for
	// a text column.
	share func(r *row) float64
	text  func(r *row) string
	// flex: takes the width that is left (the last column).
	flex bool
	// flexText is a flex column's text in room columns (0: no limit).
	flexText func(r *row, room int) string
}

func reasonShare(reason event.Reason) func(r *row) float64 {
	return func(r *row) float64 { return float64(r.times.Wait[reason]) / 1e9 / r.secs }
}

var columns = []column{
	{title: "PID", help: "process id (thread id with threads shown, processes with cgroups)", width: 7, text: func(r *row) string { return fmt.Sprint(r.id) }},
	{title: "COMM", help: "command name (the cgroup's short name with cgroups)", width: 12, text: func(r *row) string { return r.comm }},
	{title: "LOST", help: "waiting for a CPU, a cgroup's CPU quota, memory reclaim, the disk, dirty-page throttling or a sync", width: 5,
		share: func(r *row) float64 { return float64(r.times.Lost()) / 1e9 / r.secs }},
	{title: "CPU", help: "running on a CPU", width: 5,
		share: func(r *row) float64 { return float64(r.times.CPU) / 1e9 / r.secs }},
	{title: "RUNQ", help: "runnable, waiting for a CPU", width: 5, share: reasonShare(event.ReasonRunqueue)},
	{title: "QUOTA", help: "runnable, held off the CPU by its cgroup's CPU quota", width: 5, share: reasonShare(event.ReasonCPUQuota), priority: 1},
	{title: "MEM", help: "in memory reclaim (at a cgroup's memory limit, or the machine's)", width: 5, share: reasonShare(event.ReasonMemory), priority: 2},
	{title: "READ", help: "waiting for disk reads", width: 5, share: reasonShare(event.ReasonDiskRead)},
	{title: "WRITE", help: "waiting for disk writes (writeback, journal, direct I/O)", width: 5, share: reasonShare(event.ReasonDiskWrite)},
	{title: "DIRTY", help: "throttled for dirtying pages faster than the disk writes them", width: 5, share: reasonShare(event.ReasonDirtyThrottle)},
	{title: "SYNC", help: "in fsync, sync and friends", width: 5, share: reasonShare(event.ReasonSync), priority: 2},
	{title: "NET", help: "waiting on the network (or polling sockets)", width: 5, share: reasonShare(event.ReasonNetwork), priority: 3},
	{title: "LOCK", help: "waiting on locks (futex, flock, kernel locks)", width: 5, share: reasonShare(event.ReasonLock), priority: 3},
	{title: "IPC", help: "waiting on pipes and unix sockets", width: 5, share: reasonShare(event.ReasonIPC), priority: 4},
	{title: "SLEEP", help: "sleeping (nanosleep)", width: 5, share: reasonShare(event.ReasonSleep), priority: 4},
	{title: "CHILD", help: "waiting for a child", width: 5, share: reasonShare(event.ReasonChild), priority: 4},
	{title: "OTHER", help: "off CPU for another reason", width: 5, share: reasonShare(event.ReasonOther), priority: 4},
	{title: "MOSTLY", help: "where most of its time went", width: 14, priority: 2, text: mostly},
	{title: "WAITING ON", help: "the file, socket peer or device it waited on the longest", flex: true, width: 16,
		flexText: waitingOn},
}

// mostly names the reason (cpu included) with the most time.
func mostly(r *row) string {
	best, most := event.ReasonCPU, r.times.CPU
	for _, reason := range event.Reasons {
		if ns := r.times.Wait[reason]; ns > most {
			best, most = reason, ns
		}
	}
	if most == 0 {
		return "-"
	}
	return string(best)
}

// sortable lists the indexes of the columns one can sort by.
func sortable() []int {
	var out []int
	for i, c := range columns {
		if c.share != nil {
			out = append(out, i)
		}
	}
	return out
}

// defaultSort is LOST.
const defaultSort = 2

// visible picks the columns that fit in width (0: all of them).
func visible(width int) []int {
	all := make([]int, len(columns))
	for i := range columns {
		all[i] = i
	}
	if width <= 0 {
		return all
	}
	for drop := 4; drop >= 0; drop-- {
		var out []int
		used := 0
		for i, c := range columns {
			if c.priority > drop {
				continue
			}
			out = append(out, i)
			used += c.width + 1
		}
		if used <= width || drop == 0 {
			return out
		}
	}
	return all
}

// waitingOn is the object waited on the longest, with how long when there
// is room: the end of a path says the most, so a long one loses its start.
func waitingOn(r *row, room int) string {
	if r.waitedOn == "" {
		return ""
	}
	d := " (" + format.Dur(r.waitedFor) + ")"
	if room <= 0 {
		return r.waitedOn + d
	}
	if room < 40 {
		return cutLeft(r.waitedOn, room)
	}
	return cutLeft(r.waitedOn, room-len(d)) + d
}
