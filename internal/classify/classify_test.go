package classify

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

func TestReason(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want event.Reason
	}{
		{"preempted", Input{State: 'R', Syscall: -1}, event.ReasonRunqueue},
		{"throttled by its cgroup's CPU quota", Input{State: 'R', Syscall: -1, Quota: true}, event.ReasonCPUQuota},
		{"preempted in a syscall, over quota", Input{State: 'R', Syscall: 0, Quota: true}, event.ReasonCPUQuota},
		{"fsync waits on writeback", Input{State: 'D', Syscall: 74, Frames: []string{"__schedule", "io_schedule", "folio_wait_bit", "folio_wait_writeback", "__filemap_fdatawait_range"}}, event.ReasonSync},
		{"dirty throttle", Input{State: 'D', Syscall: 1, Frames: []string{"schedule_timeout", "io_schedule_timeout", "balance_dirty_pages", "generic_perform_write"}}, event.ReasonDirtyThrottle},
		{"truncate waits on writeback: specific beats generic", Input{State: 'D', Syscall: 263, Frames: []string{"io_schedule", "folio_wait_bit", "folio_wait_writeback", "truncate_inode_partial_folio"}}, event.ReasonDiskWrite},
		{"page cache miss", Input{State: 'D', Syscall: 0, Frames: []string{"io_schedule", "folio_wait_bit", "filemap_get_pages", "filemap_read"}}, event.ReasonDiskRead},
		{"page lock on the write path", Input{State: 'D', Syscall: 1, Frames: []string{"io_schedule", "__folio_lock", "ext4_write_begin", "generic_perform_write"}}, event.ReasonDiskWrite},
		{"recv", Input{State: 'S', Syscall: 45, Frames: []string{"schedule_timeout", "sk_wait_data", "tcp_recvmsg_locked"}}, event.ReasonNetwork},
		{"pipe (6.18 name)", Input{State: 'S', Syscall: 0, Frames: []string{"schedule", "anon_pipe_read", "vfs_read"}}, event.ReasonIPC},
		{"futex", Input{State: 'S', Syscall: 202, Frames: []string{"schedule", "futex_wait_queue", "__futex_wait"}}, event.ReasonLock},
		{"nanosleep", Input{State: 'S', Syscall: 230, Frames: []string{"schedule", "do_nanosleep", "hrtimer_nanosleep"}}, event.ReasonSleep},
		{"wait4", Input{State: 'S', Syscall: 61, Frames: []string{"schedule", "do_wait", "kernel_wait4"}}, event.ReasonChild},
		{"vfork", Input{State: 'D', Syscall: 58, Frames: []string{"schedule", "wait_for_vfork_done"}}, event.ReasonChild},
		{"poll with sockets", Input{State: 'S', Syscall: 7, Frames: []string{"schedule_hrtimeout_range", "do_sys_poll"}, PollOnSockets: true}, event.ReasonNetwork},
		{"poll without sockets", Input{State: 'S', Syscall: 7, Frames: []string{"schedule_hrtimeout_range", "do_sys_poll"}}, event.ReasonIPC},
		{"journal", Input{State: 'D', Syscall: 2, Frames: []string{"schedule", "wait_transaction_locked", "add_transaction_credits", "start_this_handle", "jbd2__journal_start"}}, event.ReasonDiskWrite},
		{"unknown D wait on io", Input{State: 'D', Syscall: 0, Frames: []string{"schedule", "io_schedule", "something_new"}}, event.ReasonDiskRead},
		{"O_DIRECT read of a file", Input{State: 'D', Syscall: 0, Frames: []string{"schedule", "io_schedule", "__iomap_dio_rw", "iomap_dio_rw", "ext4_file_read_iter", "vfs_read"}}, event.ReasonDiskRead},
		{"O_DIRECT write of a file", Input{State: 'D', Syscall: 18, Frames: []string{"schedule", "io_schedule", "__iomap_dio_rw", "iomap_dio_rw", "ext4_file_write_iter", "vfs_write"}}, event.ReasonDiskWrite},
		{"O_DIRECT read of a block device", Input{State: 'D', Syscall: 17, Frames: []string{"schedule", "io_schedule", "__blkdev_direct_IO", "blkdev_direct_IO", "blkdev_read_iter"}}, event.ReasonDiskRead},
		{"O_DIRECT read, direction from the syscall", Input{State: 'D', Syscall: 295, Frames: []string{"schedule", "io_schedule", "__iomap_dio_rw"}}, event.ReasonDiskRead},
		{"nothing known", Input{State: 'S', Syscall: -1}, event.ReasonOther},
		// who ended a poll tells it (issue 24)
		{"poll answered over TCP", Input{State: 'S', Syscall: 7, WakerKind: event.KindSocketInet}, event.ReasonNetwork},
		{"poll answered over a unix socket, process with TCP sockets", Input{State: 'S', Syscall: 232, PollOnSockets: true,
			WakerKind: event.KindSocketUnix}, event.ReasonIPC},
		{"epoll ended by another process's kill (a latch)", Input{State: 'S', Syscall: 232, WakerSyscall: 62}, event.ReasonLock},
		{"poll ended by another process's write to a pipe, process with TCP sockets", Input{State: 'S', Syscall: 270, PollOnSockets: true,
			WakerSyscall: 1}, event.ReasonIPC},
		{"poll ended by another process's writev to a pipe", Input{State: 'S', Syscall: 7, PollOnSockets: true, WakerSyscall: 20}, event.ReasonIPC},
		{"poll ended by a write on a TCP socket", Input{State: 'S', Syscall: 7, PollOnSockets: true, WakerSyscall: 1,
			WakerKind: event.KindSocketInet}, event.ReasonNetwork},
		{"poll ended by another process's read, process with TCP sockets", Input{State: 'S', Syscall: 7, PollOnSockets: true,
			WakerSyscall: 0}, event.ReasonNetwork},
		{"a kill ending a read is no lock", Input{State: 'S', Syscall: 0, FileKind: event.KindPipe, WakerSyscall: 62}, event.ReasonIPC},
		{"semop", Input{State: 'S', Syscall: 65}, event.ReasonLock},
		{"semtimedop", Input{State: 'S', Syscall: 220}, event.ReasonLock},
		// a timed wait its own timeout ended slept, from every root (issue 42)
		{"epoll ended by its timeout (pg_sleep)", Input{State: 'S', Syscall: 232, PollOnSockets: true, WakerSyscall: event.WakerTimer}, event.ReasonSleep},
		{"futex ended by its timeout (SLEEP())", Input{State: 'S', Syscall: 202, WakerSyscall: event.WakerTimer}, event.ReasonSleep},
		{"futex ended by a thread", Input{State: 'S', Syscall: 202, WakerSyscall: -1}, event.ReasonLock},
		{"a read ended by the timer is still the pipe's", Input{State: 'S', Syscall: 0, FileKind: event.KindPipe, WakerSyscall: event.WakerTimer}, event.ReasonIPC},
		{"an uninterruptible wait the timer ended", Input{State: 'D', Syscall: 202, WakerSyscall: event.WakerTimer}, event.ReasonLock},
	} {
		if got := Reason(tc.in); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Interruptible waits come without a kernel stack: the syscall and the kind
// of its file must tell them as the stack did.
func TestStacklessInterruptibleWaits(t *testing.T) {
	cases := []struct {
		in   Input
		want event.Reason
	}{
		{Input{State: 'S', Syscall: 0, FileKind: event.KindPipe}, event.ReasonIPC},
		{Input{State: 'S', Syscall: 45, FileKind: event.KindSocketInet}, event.ReasonNetwork},
		{Input{State: 'S', Syscall: 0, FileKind: event.KindSocketUnix}, event.ReasonIPC},
		{Input{State: 'S', Syscall: 73, FileKind: event.KindRegular}, event.ReasonLock},
		{Input{State: 'S', Syscall: 202}, event.ReasonLock},
		{Input{State: 'S', Syscall: 35}, event.ReasonSleep},
		{Input{State: 'S', Syscall: 61}, event.ReasonChild},
		{Input{State: 'S', Syscall: 232, PollOnSockets: true}, event.ReasonNetwork},
		{Input{State: 'S', Syscall: 0, FileKind: event.KindRegular}, event.ReasonOther},
		// a stack, when there is one, still decides
		{Input{State: 'S', Syscall: 0, FileKind: event.KindPipe, Frames: []string{"futex_wait"}}, event.ReasonLock},
	}
	for _, c := range cases {
		if got := Reason(c.in); got != c.want {
			t.Errorf("%+v: %s, want %s", c.in, got, c.want)
		}
	}
}

// A wait its own timeout ended slept, whatever it polled: the local timer
// ended it (WakerTimer), it was asleep (S) and in a call that waits with a
// timeout. critpath takes an outside process's poll no task was seen ending
// as the timer's, and asks this.
func TestTimedOut(t *testing.T) {
	poll, _ := event.SyscallNr("poll")
	epoll, _ := event.SyscallNr("epoll_wait")
	futex, _ := event.SyscallNr("futex")
	read, _ := event.SyscallNr("read")
	for _, tc := range []struct {
		name string
		in   Input
		want bool
	}{
		{"a poll the timer ended", Input{State: 'S', Syscall: poll, WakerSyscall: event.WakerTimer}, true},
		{"an epoll_wait the timer ended, process with sockets", Input{State: 'S', Syscall: epoll, WakerSyscall: event.WakerTimer, PollOnSockets: true}, true},
		{"a futex with a timeout", Input{State: 'S', Syscall: futex, WakerSyscall: event.WakerTimer}, true},
		{"a peer's poll begun before capture, its state not seen", Input{State: '?', Syscall: epoll, WakerSyscall: event.WakerTimer}, true},
		{"a poll preempted at the timer's tick", Input{State: 'R', Syscall: poll, WakerSyscall: event.WakerTimer}, false},
		{"a poll another task ended", Input{State: 'S', Syscall: poll, WakerSyscall: -1}, false},
		{"a read has no timeout", Input{State: 'S', Syscall: read, WakerSyscall: event.WakerTimer}, false},
	} {
		if got := TimedOut(tc.in); got != tc.want {
			t.Errorf("%s: TimedOut = %v, want %v", tc.name, got, tc.want)
		}
		if got := Reason(tc.in) == event.ReasonSleep; tc.want && !got {
			t.Errorf("%s: timed out, but Reason = %s", tc.name, Reason(tc.in))
		}
	}
}

// A submitter waits in io_uring_enter for its operations, and nothing else
// of the wait tells what they are: the longest one in flight does. Any other
// fact that tells the wait wins (a stack in reclaim), and the operation says
// nothing of a wait in another call.
func TestRingWaits(t *testing.T) {
	enter, _ := event.SyscallNr("io_uring_enter")
	read, _ := event.SyscallNr("read")
	op := func(c event.UringClass, k event.FileKind) *RingOp { return &RingOp{Class: c, Kind: k} }
	for _, tc := range []struct {
		name string
		in   Input
		want event.Reason
	}{
		{"a read of a file", Input{State: 'S', Syscall: enter, Ring: op(event.UringRead, event.KindRegular)}, event.ReasonDiskRead},
		{"a read of a socket", Input{State: 'S', Syscall: enter, Ring: op(event.UringRead, event.KindSocketInet)}, event.ReasonNetwork},
		{"a write of a block device", Input{State: 'S', Syscall: enter, Ring: op(event.UringWrite, event.KindBlock)}, event.ReasonDiskWrite},
		{"a send over a unix socket", Input{State: 'S', Syscall: enter, Ring: op(event.UringSend, event.KindSocketUnix)}, event.ReasonNetwork},
		{"a recv", Input{State: 'S', Syscall: enter, Ring: op(event.UringRecv, event.KindUnknown)}, event.ReasonNetwork},
		{"an fsync", Input{State: 'S', Syscall: enter, Ring: op(event.UringSync, event.KindRegular)}, event.ReasonSync},
		{"an operation whyslow does not class", Input{State: 'S', Syscall: enter, Ring: op(event.UringOther, event.KindRegular)}, event.ReasonOther},
		{"none in flight", Input{State: 'S', Syscall: enter}, event.ReasonOther},
		{"in reclaim, whatever was in flight", Input{State: 'D', Syscall: enter, Frames: []string{"try_to_free_pages"}, Ring: op(event.UringRead, event.KindRegular)}, event.ReasonMemory},
		{"preempted", Input{State: 'R', Syscall: enter, Ring: op(event.UringRead, event.KindRegular)}, event.ReasonRunqueue},
		{"not in io_uring_enter", Input{State: 'S', Syscall: read, Ring: op(event.UringRead, event.KindSocketInet)}, event.ReasonOther},
	} {
		if got := Reason(tc.in); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
