package capture

// CgroupOf is a process's cgroup path as /proc shows it now ("/" for the
// root, "" when the process is gone), for consumers that group processes
// live: the engine reads it only at exec.
func CgroupOf(pid uint32) string { return cgroupOf(pid) }
