package sysinfo

import (
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// CPUQuota is a cgroup's CPU bandwidth limit (CFS bandwidth control) and
// what it has cost so far, as the kernel counts it: a container's --cpus, a
// systemd unit's CPUQuota, a Kubernetes pod's cpu limit.
type CPUQuota struct {
	// Cgroup is the cgroup's path in its hierarchy ("/docker/4f1e…").
	Cgroup string
	// Version is "v1" (cpu.cfs_quota_us, cpu.cfs_period_us) or "v2" (cpu.max).
	Version string
	// Dir is its directory, where ReadCPUQuota reads it again.
	Dir string
	// QuotaUS of CPU time per PeriodUS; QuotaUS -1: no limit.
	QuotaUS, PeriodUS int64
	// Periods the cgroup had runnable tasks in, Throttled of them it ran
	// out of quota, ThrottledNS how long its tasks were held off in all
	// (cpu.stat: nr_periods, nr_throttled, throttled_time or throttled_usec).
	Periods, Throttled, ThrottledNS uint64
}

// CPUs is the quota in CPUs (0.2 for 20 ms per 100 ms), 0 when unlimited.
func (q CPUQuota) CPUs() float64 {
	if q.QuotaUS <= 0 || q.PeriodUS <= 0 {
		return 0
	}
	return float64(q.QuotaUS) / float64(q.PeriodUS)
}

// CPUQuota reads the CPU bandwidth limit of process pid's cgroup: cgroup
// v1's cpu hierarchy, else the unified (v2) one. ok is false when the
// process is gone, or its cgroup has no cpu controller files.
func (fs FS) CPUQuota(pid uint32) (q CPUQuota, ok bool) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return q, false
	}
	p, err := pfs.Proc(int(pid))
	if err != nil {
		return q, false
	}
	groups, err := p.Cgroups()
	if err != nil {
		return q, false
	}
	for _, g := range groups {
		for _, c := range g.Controllers {
			if c != "cpu" {
				continue
			}
			// v1: the cpu hierarchy is mounted alone or with cpuacct.
			for _, mount := range []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct,cpu"} {
				if q, ok := fs.cpuQuotaV1(mount, g.Path); ok {
					return q, true
				}
			}
		}
	}
	for _, g := range groups {
		if g.HierarchyID == 0 {
			for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if q, ok := fs.cpuQuotaV2(mount, g.Path); ok {
					return q, true
				}
			}
		}
	}
	return q, false
}

// ReadCPUQuota reads cgroup q again (its Dir): its counts now, once its
// processes are gone.
func (fs FS) ReadCPUQuota(q CPUQuota) (CPUQuota, bool) {
	mount := strings.TrimSuffix(q.Dir, q.Cgroup)
	if q.Version == "v1" {
		return fs.cpuQuotaV1(mount, q.Cgroup)
	}
	return fs.cpuQuotaV2(mount, q.Cgroup)
}

func (fs FS) cpuQuotaV1(mount, cgroup string) (CPUQuota, bool) {
	dir := fs.path(mount + cgroup)
	quota, err1 := os.ReadFile(dir + "/cpu.cfs_quota_us")
	period, err2 := os.ReadFile(dir + "/cpu.cfs_period_us")
	stat, err3 := os.ReadFile(dir + "/cpu.stat")
	if err1 != nil || err2 != nil || err3 != nil {
		return CPUQuota{}, false
	}
	q := CPUQuota{Cgroup: cgroup, Version: "v1", Dir: mount + cgroup}
	var err error
	if q.QuotaUS, err = strconv.ParseInt(strings.TrimSpace(string(quota)), 10, 64); err != nil {
		return CPUQuota{}, false
	}
	if q.PeriodUS, err = strconv.ParseInt(strings.TrimSpace(string(period)), 10, 64); err != nil {
		return CPUQuota{}, false
	}
	q.Periods, q.Throttled, q.ThrottledNS = parseCPUStat(string(stat))
	return q, true
}

func (fs FS) cpuQuotaV2(mount, cgroup string) (CPUQuota, bool) {
	dir := fs.path(mount + cgroup)
	max, err1 := os.ReadFile(dir + "/cpu.max")
	stat, err2 := os.ReadFile(dir + "/cpu.stat")
	if err1 != nil || err2 != nil {
		return CPUQuota{}, false
	}
	q := CPUQuota{Cgroup: cgroup, Version: "v2", Dir: mount + cgroup}
	var ok bool
	if q.QuotaUS, q.PeriodUS, ok = parseCPUMax(string(max)); !ok {
		return CPUQuota{}, false
	}
	q.Periods, q.Throttled, q.ThrottledNS = parseCPUStat(string(stat))
	return q, true
}

// parseCPUMax reads cgroup v2's cpu.max: "QUOTA PERIOD", QUOTA "max" for
// none (-1).
func parseCPUMax(s string) (quota, period int64, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, false
	}
	period, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if f[0] == "max" {
		return -1, period, true
	}
	quota, err = strconv.ParseInt(f[0], 10, 64)
	return quota, period, err == nil
}

// parseCPUStat reads a cpu.stat's throttling counts: nr_periods,
// nr_throttled, and throttled_time (v1, ns) or throttled_usec (v2).
func parseCPUStat(s string) (periods, throttled, throttledNS uint64) {
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
		case "nr_periods":
			periods = v
		case "nr_throttled":
			throttled = v
		case "throttled_time":
			throttledNS = v
		case "throttled_usec":
			throttledNS = v * 1000
		}
	}
	return periods, throttled, throttledNS
}
