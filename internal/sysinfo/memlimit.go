package sysinfo

import (
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// MemoryLimit is a memory cgroup's limit and the kernel's count of the file
// pages read back after its reclaim evicted them: what a container's memory
// limit costs a program that reads more than fits.
type MemoryLimit struct {
	Cgroup  string // path in its hierarchy
	Version string // "v1" (memory.limit_in_bytes) or "v2" (memory.max)
	Dir     string // its directory, where ReadMemoryLimit reads it again
	// LimitBytes: the hard limit, 0 none (v2's "max", v1's page-rounded
	// largest number); HighBytes: v2's memory.high (reclaim and throttling
	// above it), 0 none.
	LimitBytes, HighBytes uint64
	// RefaultPages: file pages refaulted (memory.stat workingset_refault_file,
	// v1's hierarchical total): read from storage again after the cgroup's
	// reclaim evicted them.
	RefaultPages uint64
}

// unlimited: v1 gives "no limit" as the largest page multiple of int64.
const unlimited = 1 << 62

// MemoryLimit reads the memory cgroup of process pid (v1's memory
// hierarchy, else the unified one). ok is false when the process is gone
// or its cgroup has no memory controller files.
func (fs FS) MemoryLimit(pid uint32) (MemoryLimit, bool) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return MemoryLimit{}, false
	}
	p, err := pfs.Proc(int(pid))
	if err != nil {
		return MemoryLimit{}, false
	}
	groups, err := p.Cgroups()
	if err != nil {
		return MemoryLimit{}, false
	}
	for _, g := range groups {
		for _, c := range g.Controllers {
			if c == "memory" {
				if m, ok := fs.readMemoryLimit(MemoryLimit{Cgroup: g.Path, Version: "v1", Dir: "/sys/fs/cgroup/memory" + g.Path}); ok {
					return m, true
				}
			}
		}
	}
	for _, g := range groups {
		if g.HierarchyID == 0 {
			for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if m, ok := fs.readMemoryLimit(MemoryLimit{Cgroup: g.Path, Version: "v2", Dir: mount + g.Path}); ok {
					return m, true
				}
			}
		}
	}
	return MemoryLimit{}, false
}

// ReadMemoryLimit reads cgroup m again (its Dir): its counts now.
func (fs FS) ReadMemoryLimit(m MemoryLimit) (MemoryLimit, bool) { return fs.readMemoryLimit(m) }

func (fs FS) readMemoryLimit(m MemoryLimit) (MemoryLimit, bool) {
	dir := fs.path(m.Dir)
	stat, err := os.ReadFile(dir + "/memory.stat")
	if err != nil {
		return MemoryLimit{}, false
	}
	m.LimitBytes, m.HighBytes = 0, 0
	if m.Version == "v1" {
		b, err := os.ReadFile(dir + "/memory.limit_in_bytes")
		if err != nil {
			return MemoryLimit{}, false
		}
		m.LimitBytes = parseLimit(string(b))
	} else {
		b, err := os.ReadFile(dir + "/memory.max")
		if err != nil {
			return MemoryLimit{}, false
		}
		m.LimitBytes = parseLimit(string(b))
		if b, err := os.ReadFile(dir + "/memory.high"); err == nil {
			m.HighBytes = parseLimit(string(b))
		}
	}
	m.RefaultPages = parseRefaults(string(stat))
	return m, true
}

// parseLimit reads a limit file: bytes, or "max" / a v1 "no limit" for 0.
func parseLimit(s string) uint64 {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil || v >= unlimited {
		return 0
	}
	return v
}

// parseRefaults reads memory.stat's file refaults: v1's hierarchical
// total_workingset_refault_file when there, else workingset_refault_file
// (v2's is hierarchical already; before 5.9, workingset_refault).
func parseRefaults(s string) uint64 {
	var own, total, old uint64
	var haveTotal bool
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "total_workingset_refault_file":
			total, haveTotal = v, true
		case "workingset_refault_file":
			own = v
		case "workingset_refault":
			old = v
		}
	}
	switch {
	case haveTotal:
		return total
	case own > 0:
		return own
	}
	return old
}
