package event

// ProcSample is one look at a thread in /proc by the sampled capture (where
// BPF cannot load): the facts a wait's reason is decided from, as /proc
// shows them at a tick. Time is the tick's, the same for every thread
// looked at in it.
type ProcSample struct {
	Header
	State   byte  // 'R', 'S', 'D', ... (/proc/PID/task/TID/stat)
	Syscall int32 // in progress (/proc/.../syscall), -1 none or unreadable
	FD      int32 // the syscall's file when its first argument is one, else -1
	// FileKind and Object: the kind of that file and its name, a path or a
	// socket's peer (/proc/PID/fd, /proc/net), "" unknown.
	FileKind FileKind
	Object   string
	Wchan    string   // /proc/.../wchan, "" when 0 or unreadable
	StackID  int32    // -1: no stack (unreadable without root)
	Stack    []string // kernel frames, innermost first
	// RanNS and RunDelayNS are how much the thread's time on a CPU and its
	// time runnable waiting for one grew since its previous look
	// (/proc/.../schedstat): a runnable thread's interval is split by them.
	RanNS, RunDelayNS uint64
	// IntervalNS is the time since its previous look (0: the first);
	// WasRunnable, that it was runnable then too.
	IntervalNS  uint64
	WasRunnable bool
	// Throttled: its cgroup's CPU quota held it off (cpu.stat's
	// throttled_time grew since the previous tick).
	Throttled bool
	// TimeoutAt is the earliest the wait's own timeout could end it
	// (CLOCK_MONOTONIC ns; 0: no timeout, or not readable): a poll's, a
	// select's, a futex's, read from its arguments. The wait timed out
	// when it was seen to end no earlier (classify.Sample.TimedOut).
	TimeoutAt uint64
	// Reclaim: an uninterruptible wait whose memory cgroup was at its
	// limit within a second (memory.failcnt, memory.events' max or high
	// grew): reclaim's, unless a stack says otherwise.
	Reclaim bool
	// PollOnSockets: the process had network sockets, as classify.Input's.
	PollOnSockets bool
	// OnPath: this tick's wall time is charged to this thread: the target's
	// main thread, or the child process it was waiting for, or the thread
	// of its process doing the most while it waits on a futex.
	OnPath bool
}
