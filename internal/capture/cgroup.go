package capture

import (
	"fmt"
	"os"
	"strings"
)

// cgroupOf reads a process's cgroup path from /proc: the unified (v2) entry,
// or on cgroup v1 the cpu or systemd hierarchy's; "/" when it is the root.
func cgroupOf(pid uint32) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
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
