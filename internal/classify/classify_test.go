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
