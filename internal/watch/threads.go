package watch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pfKthread is PF_KTHREAD in /proc/PID/stat's flags (include/linux/sched.h).
const pfKthread = 0x00200000

// kernelThread says whether pid is a kernel thread. An idle kworker sleeps
// in TASK_IDLE, which sched_switch shows as uninterruptible: it is never a
// stall. A process gone is not one.
func kernelThread(pid uint32) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The fields after the command name, which may hold spaces and ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64) // field 9: state is field 3
	return err == nil && flags&pfKthread != 0
}

// threadComm is a thread's name now, for a wait in progress (the engine's
// list carries none); "" when it is gone.
func threadComm(pid, tid uint32) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}
