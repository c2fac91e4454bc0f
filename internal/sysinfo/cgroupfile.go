package sysinfo

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// TaskCgroups are the cgroups one thread is in, read from its
// /proc/PID/task/TID/cgroup (a thread may be moved apart from its process:
// cgroup v1's tasks file): the cgroup v1 cpu and memory hierarchies' paths,
// and the unified (v2) one's, "" where it has none.
type TaskCgroups struct {
	CPU, Memory, Unified string
	HasUnified           bool
}

// ParseTaskCgroups reads /proc/PID/task/TID/cgroup's lines
// ("ID:CONTROLLERS:PATH").
func ParseTaskCgroups(b []byte) TaskCgroups {
	var c TaskCgroups
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		id, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		ctrls, path, ok := bytes.Cut(rest, []byte{':'})
		if !ok {
			continue
		}
		if string(id) == "0" && len(ctrls) == 0 {
			c.Unified, c.HasUnified = string(path), true
			continue
		}
		for _, ctl := range bytes.Split(ctrls, []byte{','}) {
			switch string(ctl) {
			case "cpu":
				c.CPU = string(path)
			case "memory":
				c.Memory = string(path)
			}
		}
	}
	return c
}

// CPUQuotaIn reads the CPU quota of the cgroups c (v1's cpu hierarchy,
// else the unified one), as CPUQuota reads a process's.
func (fs FS) CPUQuotaIn(c TaskCgroups) (CPUQuota, bool) {
	if c.CPU != "" {
		for _, mount := range []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct,cpu"} {
			if q, ok := fs.cpuQuotaV1(mount, c.CPU); ok {
				return q, true
			}
		}
	}
	if c.HasUnified {
		for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			if q, ok := fs.cpuQuotaV2(mount, c.Unified); ok {
				return q, true
			}
		}
	}
	return CPUQuota{}, false
}

// MemoryEvents is where a memory cgroup counts the times it was at its
// limit: v1's memory.failcnt (charges that failed, each a reclaim), v2's
// memory.events ("max" and "high": reclaim at the limit, or above
// memory.high).
type MemoryEvents struct {
	Path    string // the file
	Version string
}

// MemoryEventsIn finds the memory cgroup of c that has a limit: its
// events file; false for none (no memory controller, or no limit).
func (fs FS) MemoryEventsIn(c TaskCgroups) (MemoryEvents, bool) {
	if c.Memory != "" {
		dir := fs.path("/sys/fs/cgroup/memory" + c.Memory)
		if b, err := os.ReadFile(dir + "/memory.limit_in_bytes"); err == nil {
			if parseLimit(string(b)) == 0 {
				return MemoryEvents{}, false
			}
			return MemoryEvents{Path: dir + "/memory.failcnt", Version: "v1"}, true
		}
	}
	if c.HasUnified {
		for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			dir := fs.path(mount + c.Unified)
			max, err1 := os.ReadFile(dir + "/memory.max")
			high, err2 := os.ReadFile(dir + "/memory.high")
			if err1 != nil || err2 != nil {
				continue
			}
			if parseLimit(string(max)) == 0 && parseLimit(string(high)) == 0 {
				return MemoryEvents{}, false
			}
			return MemoryEvents{Path: dir + "/memory.events", Version: "v2"}, true
		}
	}
	return MemoryEvents{}, false
}

// ParseMemoryEvents reads a MemoryEvents file: v1's failcnt, or v2's "max"
// and "high" counts summed.
func ParseMemoryEvents(version string, b []byte) uint64 {
	if version == "v1" {
		v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return v
	}
	var n uint64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && (k == "max" || k == "high") {
			x, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			n += x
		}
	}
	return n
}
