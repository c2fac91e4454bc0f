// Package sysinfo answers what this machine offers capture: privileges, BTF,
// tracefs, PSI, delay accounting, cgroup version. Paths hang off an FS root
// so tests can point it at fixtures.
package sysinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// FS is the root under which /proc and /sys are read ("/" on a live system).
type FS struct{ Root string }

// Host is the machine whyslow runs on. Code that reads the live system
// names it; tests give an FS rooted at their fixtures instead.
var Host = FS{Root: "/"}

func (fs FS) path(p string) string { return filepath.Join(fs.Root, p) }

// Capabilities whyslow needs (linux/capability.h).
const (
	CapSysAdmin = 21
	CapPerfmon  = 38
	CapBPF      = 39
)

// EffectiveCaps reads CapEff of a process ("self" for this one) through procfs.
func (fs FS) EffectiveCaps(pid string) (uint64, error) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return 0, err
	}
	var p procfs.Proc
	if pid == "self" {
		p, err = pfs.Self()
	} else {
		n, perr := strconv.Atoi(pid)
		if perr != nil {
			return 0, perr
		}
		p, err = pfs.Proc(n)
	}
	if err != nil {
		return 0, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, err
	}
	return st.CapEff, nil
}

// CanTrace reports whether caps allow loading tracing programs.
func CanTrace(caps uint64) bool {
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	return has(CapSysAdmin) || (has(CapBPF) && has(CapPerfmon))
}

// HasBTF reports whether the kernel exposes its BTF (CO-RE needs it).
func (fs FS) HasBTF() bool {
	_, err := os.Stat(fs.path("/sys/kernel/btf/vmlinux"))
	return err == nil
}

// TracefsMounted reports whether tracefs is mounted at /sys/kernel/tracing.
func (fs FS) TracefsMounted() bool {
	_, err := os.Stat(fs.path("/sys/kernel/tracing/events"))
	return err == nil
}

// HasPSI reports whether pressure stall information is available.
func (fs FS) HasPSI() bool {
	_, err := os.Stat(fs.path("/proc/pressure/io"))
	return err == nil
}

// DelayAccounting reads kernel.task_delayacct: "on", "off" or "absent".
func (fs FS) DelayAccounting() string {
	b, err := os.ReadFile(fs.path("/proc/sys/kernel/task_delayacct"))
	if err != nil {
		return "absent"
	}
	if strings.TrimSpace(string(b)) == "1" {
		return "on"
	}
	return "off"
}

// CgroupVersion is "v2" (unified), "v1" or "hybrid", from what is mounted.
func (fs FS) CgroupVersion() string {
	if _, err := os.Stat(fs.path("/sys/fs/cgroup/cgroup.controllers")); err == nil {
		return "v2"
	}
	if _, err := os.Stat(fs.path("/sys/fs/cgroup/unified/cgroup.controllers")); err == nil {
		return "hybrid"
	}
	return "v1"
}

// CgroupControllers names the enabled cgroup controllers by where they are
// mounted: on a v1 hierarchy (/proc/cgroups: hierarchy id not 0), and on
// the unified (v2) one (its cgroup.controllers).
func (fs FS) CgroupControllers() (v1, v2 []string) {
	if pfs, err := procfs.NewFS(fs.path("/proc")); err == nil {
		if all, err := pfs.CgroupSummarys(); err == nil {
			for _, c := range all {
				if c.Enabled == 1 && c.Hierarchy != 0 {
					v1 = append(v1, c.SubsysName)
				}
			}
		}
	}
	for _, p := range []string{"/sys/fs/cgroup/cgroup.controllers", "/sys/fs/cgroup/unified/cgroup.controllers"} {
		if b, err := os.ReadFile(fs.path(p)); err == nil {
			v2 = strings.Fields(string(b))
			break
		}
	}
	return v1, v2
}

// Lockdown is the kernel's lockdown mode (/sys/kernel/security/lockdown:
// "none [integrity] confidentiality", the bracketed one), "" when unknown.
// In confidentiality mode BPF may not read kernel memory.
func (fs FS) Lockdown() string {
	b, err := os.ReadFile(fs.path("/sys/kernel/security/lockdown"))
	if err != nil {
		return ""
	}
	s := string(b)
	open, end := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if open < 0 || end < open {
		return ""
	}
	return s[open+1 : end]
}
