package sysinfo

import (
	"errors"
	"time"

	"github.com/prometheus/procfs"
)

// CPUIdle is the time every CPU together has spent idle since boot, iowait
// included (a CPU waiting on I/O runs nothing: anyone could have used it),
// as /proc/stat counts it, in the kernel's ticks.
func (fs FS) CPUIdle() (time.Duration, error) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return 0, err
	}
	st, err := pfs.Stat()
	if err != nil {
		return 0, err
	}
	return time.Duration((st.CPUTotal.Idle + st.CPUTotal.Iowait) * float64(time.Second)), nil
}

// CPUWaited is how long, since boot, some runnable task waited for a CPU
// (the "some" total of /proc/pressure/cpu). An error where the kernel has
// no pressure stall information.
func (fs FS) CPUWaited() (time.Duration, error) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return 0, err
	}
	psi, err := pfs.PSIStatsForResource("cpu")
	if err != nil {
		return 0, err
	}
	if psi.Some == nil {
		return 0, errors.New("/proc/pressure/cpu has no some line")
	}
	return time.Duration(psi.Some.Total) * time.Microsecond, nil
}
