package sysinfo

import (
	"slices"

	"github.com/prometheus/procfs/sysfs"
)

// sharedSchedClocks are the clock sources under which the scheduler's clock
// (sched_clock(), each run queue's rq->clock) is one clock across the CPUs:
// the TSC (the kernel leaves it as the clock source once it finds it
// unstable) and the hypervisors' pages built on it.
var sharedSchedClocks = []string{"tsc", "kvm-clock", "hyperv_clocksource_tsc_page"}

// SchedClockShared reports whether the run queues' clocks can be compared
// across CPUs, as the capture's context switch stamps need
// (bpf/clock.bpf.h): the current clock source is one that keeps
// sched_clock() shared. No when it cannot tell.
func (fs FS) SchedClockShared() bool {
	sys, err := sysfs.NewFS(fs.path("/sys"))
	if err != nil {
		return false
	}
	sources, err := sys.ClockSources()
	if err != nil || len(sources) == 0 {
		return false
	}
	return slices.Contains(sharedSchedClocks, sources[0].Current)
}
