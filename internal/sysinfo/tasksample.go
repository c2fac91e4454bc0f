package sysinfo

// What the sampled capture (internal/procsample) shares with attach's look
// at the threads already waiting: one reading of /proc's per-task files.

// ParseSyscall reads /proc/PID/task/TID/syscall: the call in progress (-1
// none, or on a CPU) and its arguments.
func ParseSyscall(b []byte) (int32, []uint64) { return parseSyscall(b) }

// ParseStack reads /proc/PID/task/TID/stack: its functions, innermost first.
func ParseStack(b []byte) []string { return parseStack(b) }

// FDArg says whether a syscall's first argument is the file it waits on.
func FDArg(nr int32) bool { return fdArg[nr] }
