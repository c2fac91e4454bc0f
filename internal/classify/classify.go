// Package classify decides why a thread was off CPU from the kernel stack at
// switch-out and the syscall in progress, not from the syscall alone: a sync
// spends its time in writeback waits, a curl in poll.
package classify

import (
	"strings"

	"github.com/whyslow/whyslow/internal/event"
)

// Input is what the kernel told us about one off-CPU interval.
type Input struct {
	State   byte     // 'R', 'S', 'D', ...
	Syscall int32    // in progress, -1 none
	Frames  []string // kernel stack, innermost first
	// PollOnSockets: the process had network sockets, so a poll/epoll/select
	// wait is counted as network rather than ipc/other, unless its waker
	// tells more (its socket, or a write to no socket: a pipe).
	PollOnSockets bool
	// FileKind is the kind of the syscall's file. Interruptible waits come
	// without a stack (it costs more than the rest of the switch): the
	// syscall and this tell them.
	FileKind event.FileKind
	// WakerKind is the kind of socket the waker was sending on when it ended
	// the wait (0: none seen): a poll woken by an answer over TCP waited on
	// the network, over a Unix socket on another process.
	WakerKind event.FileKind
	// WakerSyscall is the syscall of the other process that ended the wait
	// (-1 or 0: none seen). A poll ended by another process's kill() was a
	// wait for it to signal: PostgreSQL's latches, on which a backend waits
	// for a row lock another session holds.
	WakerSyscall int32
	// Quota: a runnable thread held off the CPU by its cgroup's CPU quota
	// (CFS bandwidth throttling), not by other work: the CPUs may be idle.
	Quota bool
	// Ring is the longest io_uring operation of the process in flight
	// during the wait (nil: none). A submitter waits in io_uring_enter for
	// its operations' completions, and its stack and file say nothing of
	// what they are: the operation does. Not among the facts a recording
	// keeps per wait: the analyses join a wait to its process's operations
	// (the ring_reason macro is this rule, made from Reason).
	Ring *RingOp
	// Reclaim: an uninterruptible wait, not in a read, while its memory
	// cgroup was at its limit, with no stack to say where it waited (the
	// sampled capture without root reads the cgroup's count of reclaims:
	// Sample.Reclaim). A write there waits for reclaim, which waits for
	// writeback; with a stack, the reclaim frames say it (rules).
	Reclaim bool
}

// RingOp is an io_uring operation as a wait's fact: its class and the kind
// of its file.
type RingOp struct {
	Class event.UringClass
	Kind  event.FileKind
}

// rule maps a kernel function (matched as a prefix) to a reason. Rules are in
// priority order: the first rule that matches any frame wins, so a specific
// wait (folio_wait_writeback) beats the generic one inside it (folio_wait_bit).
type rule struct {
	prefix string
	reason event.Reason
}

var rules = []rule{
	// memory: a wait inside reclaim (at a memory cgroup's limit, or the
	// machine's) or above a cgroup's memory.high is memory's, whatever it
	// waits on inside (writeback, a throttle, a lock)
	{"try_to_free_mem_cgroup_pages", event.ReasonMemory},
	{"try_to_free_pages", event.ReasonMemory},
	{"mem_cgroup_handle_over_high", event.ReasonMemory},
	{"throttle_direct_reclaim", event.ReasonMemory},
	{"balance_dirty_pages", event.ReasonDirtyThrottle},
	// socket waits
	{"sk_wait_data", event.ReasonNetwork},
	{"sk_stream_wait_memory", event.ReasonNetwork},
	{"inet_csk_accept", event.ReasonNetwork},
	{"inet_wait_for_connect", event.ReasonNetwork},
	{"__inet_stream_connect", event.ReasonNetwork},
	{"tcp_recvmsg", event.ReasonNetwork},
	{"tcp_sendmsg", event.ReasonNetwork},
	{"__skb_wait_for_more_packets", event.ReasonNetwork},
	{"udp_recvmsg", event.ReasonNetwork},
	{"unix_stream_read", event.ReasonIPC},
	{"unix_stream_data_wait", event.ReasonIPC},
	{"unix_dgram_recvmsg", event.ReasonIPC},
	{"unix_wait_for_peer", event.ReasonIPC},
	{"pipe_read", event.ReasonIPC},
	{"anon_pipe_read", event.ReasonIPC},
	{"pipe_write", event.ReasonIPC},
	{"anon_pipe_write", event.ReasonIPC},
	{"pipe_wait", event.ReasonIPC},
	{"wait_for_partner", event.ReasonIPC},
	// locks
	{"futex_wait", event.ReasonLock},
	{"__futex_wait", event.ReasonLock},
	{"flock_lock_inode_wait", event.ReasonLock},
	{"locks_lock_inode_wait", event.ReasonLock},
	{"fcntl_setlk", event.ReasonLock},
	{"__mutex_lock", event.ReasonLock},
	{"mutex_lock", event.ReasonLock},
	{"rwsem_down_", event.ReasonLock},
	{"down_read", event.ReasonLock},
	{"down_write", event.ReasonLock},
	{"percpu_rwsem_wait", event.ReasonLock},
	// storage writes
	{"folio_wait_writeback", event.ReasonDiskWrite},
	{"wait_on_page_writeback", event.ReasonDiskWrite},
	{"__filemap_fdatawait_range", event.ReasonDiskWrite},
	{"filemap_fdatawait", event.ReasonDiskWrite},
	{"jbd2_log_wait_commit", event.ReasonDiskWrite},
	{"jbd2__journal_start", event.ReasonDiskWrite},
	{"wait_transaction_locked", event.ReasonDiskWrite},
	{"add_transaction_credits", event.ReasonDiskWrite},
	{"blkdev_issue_flush", event.ReasonDiskWrite},
	{"submit_bio_wait", event.ReasonDiskWrite},
	// direct I/O waits for its own requests, reads or writes alike
	{"__blkdev_direct_IO", reasonDirect},
	{"blkdev_direct_IO", reasonDirect},
	{"iomap_dio_rw", reasonDirect},
	{"__iomap_dio_rw", reasonDirect},
	{"__blockdev_direct_IO", reasonDirect},
	{"wb_wait_for_completion", event.ReasonDiskWrite},
	{"sync_inodes_sb", event.ReasonDiskWrite},
	// storage reads
	{"filemap_fault", event.ReasonDiskRead},
	{"filemap_read", event.ReasonDiskRead},
	{"filemap_get_pages", event.ReasonDiskRead},
	{"__bread", event.ReasonDiskRead},
	{"bh_read", event.ReasonDiskRead},
	{"__wait_on_buffer", event.ReasonDiskRead},
	{"ext4_read_", event.ReasonDiskRead},
	{"do_read_cache", event.ReasonDiskRead},
	// generic page waits, only when nothing more specific matched
	{"folio_wait_bit", event.ReasonDiskRead},
	{"__folio_lock", event.ReasonDiskRead},
	{"bit_wait_io", event.ReasonDiskRead},
	// sleeping
	{"do_nanosleep", event.ReasonSleep},
	{"hrtimer_nanosleep", event.ReasonSleep},
	{"msleep", event.ReasonSleep},
	// children
	{"do_wait", event.ReasonChild},
	{"kernel_wait4", event.ReasonChild},
	{"kernel_waitid", event.ReasonChild},
	{"wait_for_vfork_done", event.ReasonChild},
}

// reasonDirect marks a direct I/O wait: disk-read or disk-write by the
// direction of the I/O (directIO).
const reasonDirect event.Reason = "direct"

// The syscalls each rule reads, by name or class from internal/event, the
// one table of numbers.
var (
	// syncSyscalls are the calls whose whole wait is the cost of syncing.
	syncSyscalls  = ofClass(event.ClassSync)
	readSyscalls  = ofClass(event.ClassRead)
	writeSyscalls = ofClass(event.ClassWrite)
	// lockSyscalls wait for a file lock: flock, fcntl (record locks only are followed).
	lockSyscalls = ofClass(event.ClassLock)
	pollSyscalls = named(event.PollSyscalls...)
	// timedWaits wait on something with a timeout besides polls.
	timedWaits = named("futex", "semtimedop", "rt_sigtimedwait")
	// signalSyscalls send a signal.
	signalSyscalls = named("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_send_signal")
	lockWaits      = named("futex", "semop", "semtimedop")
	sleepSyscalls  = named("nanosleep", "clock_nanosleep", "pause")
	childSyscalls  = named("wait4", "waitid", "vfork")
	sigTimedWait   = named("rt_sigtimedwait")
	// ringWaits wait for io_uring operations' completions.
	ringWaits = named("io_uring_enter")
	// feedSyscalls write into a file, a pipe or a socket: the waker's call
	// when it fed what a poll waited on.
	feedSyscalls = union(ofClass(event.ClassWrite), ofClass(event.ClassXfer))
)

func union(sets ...map[int32]bool) map[int32]bool {
	all := map[int32]bool{}
	for _, s := range sets {
		for nr := range s {
			all[nr] = true
		}
	}
	return all
}

// named is the set of the syscalls of these names; a name internal/event
// does not know is a mistake of this file's, found at start.
func named(names ...string) map[int32]bool {
	set := make(map[int32]bool, len(names))
	for _, n := range names {
		nr, ok := event.SyscallNr(n)
		if !ok {
			panic("classify: unknown syscall " + n)
		}
		set[nr] = true
	}
	return set
}

func ofClass(c event.Class) map[int32]bool {
	set := map[int32]bool{}
	for _, nr := range event.SyscallsOfClass(c) {
		set[nr] = true
	}
	return set
}

// Reason classifies one off-CPU interval.
func Reason(in Input) event.Reason {
	if in.State == 'R' && in.Quota {
		return event.ReasonCPUQuota
	}
	if in.State == 'R' {
		return event.ReasonRunqueue
	}
	if syncSyscalls[in.Syscall] {
		// A sync that waits on a lock still waits because of the sync.
		return event.ReasonSync
	}
	if in.Reclaim && in.State == 'D' && !readSyscalls[in.Syscall] {
		return event.ReasonMemory
	}
	for _, r := range rules {
		for _, f := range in.Frames {
			if strings.HasPrefix(f, r.prefix) {
				if r.reason == reasonDirect {
					return directIO(in)
				}
				if r.reason == event.ReasonDiskRead && !readSyscalls[in.Syscall] && isWriteContext(in.Frames) {
					return event.ReasonDiskWrite
				}
				return r.reason
			}
		}
	}
	if TimedOut(in) {
		return event.ReasonSleep
	}
	if signalSyscalls[in.WakerSyscall] && (pollSyscalls[in.Syscall] || sigTimedWait[in.Syscall]) {
		return event.ReasonLock
	}
	for _, f := range in.Frames {
		if strings.HasPrefix(f, "do_sys_poll") || strings.HasPrefix(f, "do_select") ||
			strings.HasPrefix(f, "ep_poll") || strings.HasPrefix(f, "do_epoll_wait") {
			return pollReason(in)
		}
	}
	if pollSyscalls[in.Syscall] {
		return pollReason(in)
	}
	if len(in.Frames) == 0 {
		if r, ok := byFileKind(in); ok {
			return r
		}
	}
	switch {
	case lockWaits[in.Syscall]:
		return event.ReasonLock
	case sleepSyscalls[in.Syscall]:
		return event.ReasonSleep
	case childSyscalls[in.Syscall]:
		return event.ReasonChild
	}
	if in.State == 'D' {
		if hasFrame(in.Frames, "io_schedule") {
			if readSyscalls[in.Syscall] {
				return event.ReasonDiskRead
			}
			return event.ReasonDiskWrite
		}
	}
	if in.Ring != nil && ringWaits[in.Syscall] {
		return ringReason(*in.Ring)
	}
	return event.ReasonOther
}

// TimedOut says whether a wait slept: its own timeout ended it, nobody it
// waited on (pg_sleep and MariaDB's SLEEP() wait on a latch or a condition
// with a timeout). A run of polls that an answer ends at last is one wait
// on the answerer all the same (critpath's poll_runs). A wait whose state
// was not seen ('?': a peer's, begun before capture) counts as asleep: these
// calls wait in no other state, and the timer wakes only a sleeping task.
func TimedOut(in Input) bool {
	return in.WakerSyscall == event.WakerTimer && (in.State == 'S' || in.State == '?') &&
		(pollSyscalls[in.Syscall] || timedWaits[in.Syscall])
}

// ringReason is what a wait for an io_uring operation waited on: the
// network for a socket's or a send's or receive's, else the disk by its
// direction, or a sync.
func ringReason(op RingOp) event.Reason {
	switch {
	case op.Kind == event.KindSocketInet || op.Class == event.UringSend || op.Class == event.UringRecv:
		return event.ReasonNetwork
	case op.Class == event.UringRead:
		return event.ReasonDiskRead
	case op.Class == event.UringWrite:
		return event.ReasonDiskWrite
	case op.Class == event.UringSync:
		return event.ReasonSync
	}
	return event.ReasonOther
}

// directIO tells an O_DIRECT read from a write: by the file operation on the
// stack (ext4_dio_read_iter, blkdev_read_iter), else by the syscall.
func directIO(in Input) event.Reason {
	for _, f := range in.Frames {
		switch {
		case strings.Contains(f, "_read_iter"):
			return event.ReasonDiskRead
		case strings.Contains(f, "_write_iter"):
			return event.ReasonDiskWrite
		}
	}
	if readSyscalls[in.Syscall] {
		return event.ReasonDiskRead
	}
	return event.ReasonDiskWrite
}

// pollReason is what a poll waited on: told by the waker's socket, else by
// the waker's call, else by whether the process had network sockets.
func pollReason(in Input) event.Reason {
	switch in.WakerKind {
	case event.KindSocketInet:
		return event.ReasonNetwork
	case event.KindSocketUnix, event.KindPipe:
		return event.ReasonIPC
	}
	// Another process ended it writing to no socket (the kernel describes
	// the waker's file only when it is one): it fed a pipe, a FIFO or an
	// eventfd the poll watched, whatever sockets the process has besides (a
	// parent's select on its child's pipe in a program that later connects).
	if in.WakerKind == 0 && feedSyscalls[in.WakerSyscall] {
		return event.ReasonIPC
	}
	if in.PollOnSockets {
		return event.ReasonNetwork
	}
	return event.ReasonIPC
}

// isWriteContext: a page lock or page wait taken on the way to writing (write
// begin, writeback) is a write cost, not a read.
func isWriteContext(frames []string) bool {
	for _, f := range frames {
		if strings.Contains(f, "write_begin") || strings.Contains(f, "writepages") || strings.Contains(f, "truncate") ||
			strings.Contains(f, "_write_iter") || strings.HasPrefix(f, "ksys_write") {
			return true
		}
	}
	return false
}

func hasFrame(frames []string, prefix string) bool {
	for _, f := range frames {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

// byFileKind tells a wait with no stack by its syscall's file: a socket is
// the network, a pipe or a unix socket another process, a file lock a lock,
// an uninterruptible read or write of a file the disk (a sample read from
// /proc without root has no stack).
func byFileKind(in Input) (event.Reason, bool) {
	if lockSyscalls[in.Syscall] {
		return event.ReasonLock, true
	}
	switch in.FileKind {
	case event.KindRegular, event.KindBlock:
		switch {
		case in.State == 'D' && readSyscalls[in.Syscall]:
			return event.ReasonDiskRead, true
		case in.State == 'D' && writeSyscalls[in.Syscall]:
			return event.ReasonDiskWrite, true
		}
	case event.KindSocketInet:
		return event.ReasonNetwork, true
	case event.KindSocketUnix, event.KindPipe:
		return event.ReasonIPC, true
	}
	return "", false
}
