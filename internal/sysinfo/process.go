package sysinfo

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// Comm reads a process's command name ("" when it is gone).
func (fs FS) Comm(pid uint32) string {
	b, err := os.ReadFile(fs.path(fmt.Sprintf("/proc/%d/comm", pid)))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// userHZ is the unit of /proc/PID/stat times (USER_HZ, 100 on every Linux
// architecture user space sees).
const userHZ = 100

// ProcCPUTime reads a live process's user and system time, its own and its
// reaped children's.
func (fs FS) ProcCPUTime(pid int) (user, system time.Duration, ok bool) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return 0, 0, false
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		return 0, 0, false
	}
	st, err := p.Stat()
	if err != nil {
		return 0, 0, false
	}
	tick := time.Second / userHZ
	return time.Duration(st.UTime+uint(st.CUTime)) * tick, time.Duration(st.STime+uint(st.CSTime)) * tick, true
}

// Descendants lists a running process's descendants, breadth first (a
// parent's children by pid), so that attach follows children started before it.
func (fs FS) Descendants(pid int) []int {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return nil
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, p := range procs {
		if st, err := p.Stat(); err == nil {
			children[st.PPID] = append(children[st.PPID], p.PID)
		}
	}
	for _, c := range children {
		slices.Sort(c) // /proc's order is the directory's
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// DirtyBytes is Dirty + Writeback from /proc/meminfo: data waiting to reach
// the disks (0 when unknown).
func (fs FS) DirtyBytes() uint64 {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return 0
	}
	mi, err := pfs.Meminfo()
	if err != nil || mi.DirtyBytes == nil || mi.WritebackBytes == nil {
		return 0
	}
	return *mi.DirtyBytes + *mi.WritebackBytes
}

// Cgroup reads a process's cgroup path: the unified (v2) entry, or on cgroup
// v1 the cpu or systemd hierarchy's; "/" when it is the root, "" when the
// process is gone.
func (fs FS) Cgroup(pid uint32) string {
	b, err := os.ReadFile(fs.path(fmt.Sprintf("/proc/%d/cgroup", pid)))
	if err != nil {
		return ""
	}
	return parseCgroup(string(b))
}

func parseCgroup(content string) string {
	for _, line := range strings.Split(content, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[2] == "/" {
			continue
		}
		if parts[1] == "" || strings.Contains(parts[1], "cpu") || strings.Contains(parts[1], "name=systemd") {
			return parts[2]
		}
	}
	return "/"
}
