package classify

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// A sample is named by the rules that name a traced wait: these are the
// facts /proc gives, without root (no stack) and with it.
func TestSampleReason(t *testing.T) {
	nr := func(name string) int32 {
		n, ok := event.SyscallNr(name)
		if !ok {
			t.Fatalf("no syscall %s", name)
		}
		return n
	}
	for _, tc := range []struct {
		name string
		in   Sample
		want event.Reason
		cpu  float64
	}{
		{"running, no delay", Sample{State: 'R', Syscall: -1, RanNS: 50e6}, event.ReasonCPU, 1},
		{"first look: nothing grew", Sample{State: 'R', Syscall: -1}, event.ReasonCPU, 1},
		{"runnable, queued three quarters", Sample{State: 'R', Syscall: -1, RanNS: 10e6, RunDelayNS: 30e6}, event.ReasonRunqueue, 0.25},
		{"runnable, throttled by its quota", Sample{State: 'R', Syscall: -1, RanNS: 10e6, RunDelayNS: 40e6, Throttled: true}, event.ReasonCPUQuota, 0.2},
		{"runnable all along, throttled, no arrival to book its delay", Sample{State: 'R', Syscall: -1, IntervalNS: 50e6, WasRunnable: true, Throttled: true}, event.ReasonCPUQuota, 0},
		{"runnable all along, ran all of it", Sample{State: 'R', Syscall: -1, RanNS: 50e6, IntervalNS: 50e6, WasRunnable: true}, event.ReasonCPU, 1},
		{"just woken: its interval was a sleep, not a queue", Sample{State: 'R', Syscall: -1, IntervalNS: 50e6}, event.ReasonCPU, 1},
		{"fsync, no stack", Sample{State: 'D', Syscall: nr("fsync"), FileKind: event.KindRegular}, event.ReasonSync, 0},
		{"fdatasync in a writeback wait", Sample{State: 'D', Syscall: nr("fdatasync"), Wchan: "folio_wait_writeback"}, event.ReasonSync, 0},
		{"read of a file, no stack, no wchan", Sample{State: 'D', Syscall: nr("read"), FileKind: event.KindRegular}, event.ReasonDiskRead, 0},
		{"read of a file, wchan a page wait", Sample{State: 'D', Syscall: nr("pread64"), Wchan: "folio_wait_bit_common", FileKind: event.KindRegular}, event.ReasonDiskRead, 0},
		{"write held by dirty throttling", Sample{State: 'D', Syscall: nr("write"), Wchan: "balance_dirty_pages", FileKind: event.KindRegular}, event.ReasonDirtyThrottle, 0},
		{"recv on TCP, wchan unknown to the rules", Sample{State: 'S', Syscall: nr("recvfrom"), Wchan: "wait_woken", FileKind: event.KindSocketInet}, event.ReasonNetwork, 0},
		{"read on TCP, with a stack", Sample{State: 'S', Syscall: nr("read"), Frames: []string{"wait_woken", "sk_wait_data", "tcp_recvmsg_locked"}}, event.ReasonNetwork, 0},
		{"poll of a process with sockets", Sample{State: 'S', Syscall: nr("poll"), PollOnSockets: true}, event.ReasonNetwork, 0},
		{"read of a pipe", Sample{State: 'S', Syscall: nr("read"), Wchan: "anon_pipe_read", FileKind: event.KindPipe}, event.ReasonIPC, 0},
		{"sleep", Sample{State: 'S', Syscall: nr("clock_nanosleep"), Wchan: "do_nanosleep"}, event.ReasonSleep, 0},
		{"a child", Sample{State: 'S', Syscall: nr("wait4"), Wchan: "do_wait"}, event.ReasonChild, 0},
		{"a lock", Sample{State: 'S', Syscall: nr("futex"), Wchan: "futex_wait_queue"}, event.ReasonLock, 0},
		{"nothing readable", Sample{State: 'S', Syscall: -1}, event.ReasonOther, 0},
		// A wait its own timeout ended slept, whatever it polled: the
		// traced wait's WakerTimer. Not ended so, it waited on its file.
		{"select on a pipe, timed out", Sample{State: 'S', Syscall: nr("pselect6"), Wchan: "poll_schedule_timeout", FileKind: event.KindPipe, TimedOut: true}, event.ReasonSleep, 0},
		{"select on a pipe, ended by a write", Sample{State: 'S', Syscall: nr("pselect6"), Wchan: "poll_schedule_timeout", FileKind: event.KindPipe}, event.ReasonIPC, 0},
		{"poll of a TCP socket, timed out", Sample{State: 'S', Syscall: nr("poll"), FileKind: event.KindSocketInet, PollOnSockets: true, TimedOut: true}, event.ReasonSleep, 0},
		{"poll of a TCP socket, answered", Sample{State: 'S', Syscall: nr("poll"), FileKind: event.KindSocketInet, PollOnSockets: true}, event.ReasonNetwork, 0},
		{"futex with a timeout, timed out", Sample{State: 'S', Syscall: nr("futex"), Wchan: "futex_do_wait", TimedOut: true}, event.ReasonSleep, 0},
		{"futex with a timeout, timed out, wchan a rule's", Sample{State: 'S', Syscall: nr("futex"), Wchan: "futex_wait_queue", TimedOut: true}, event.ReasonSleep, 0},
		{"futex with a timeout, as root", Sample{State: 'S', Syscall: nr("futex"), Frames: []string{"futex_wait_queue", "__futex_wait"}, TimedOut: true}, event.ReasonSleep, 0},
		{"a read is not a timed wait", Sample{State: 'S', Syscall: nr("read"), FileKind: event.KindPipe, TimedOut: true}, event.ReasonIPC, 0},
		// A write held at its memory cgroup's limit: reclaim waits for
		// writeback, and the wait channel is a page's wait.
		{"write at the memory limit, no stack", Sample{State: 'D', Syscall: nr("write"), Wchan: "folio_wait_bit_common", FileKind: event.KindRegular, Reclaim: true}, event.ReasonMemory, 0},
		{"a read at the memory limit is still the disk's", Sample{State: 'D', Syscall: nr("pread64"), Wchan: "folio_wait_bit_common", FileKind: event.KindRegular, Reclaim: true}, event.ReasonDiskRead, 0},
		{"fsync at the memory limit is the sync's", Sample{State: 'D', Syscall: nr("fsync"), FileKind: event.KindRegular, Reclaim: true}, event.ReasonSync, 0},
		{"with a stack, the stack says", Sample{State: 'D', Syscall: nr("write"), Frames: []string{"balance_dirty_pages"}, Reclaim: true}, event.ReasonDirtyThrottle, 0},
		{"asleep at the memory limit", Sample{State: 'S', Syscall: nr("clock_nanosleep"), Wchan: "do_nanosleep", Reclaim: true}, event.ReasonSleep, 0},
	} {
		got, cpu := SampleReason(tc.in)
		if got != tc.want || cpu != tc.cpu {
			t.Errorf("%s: got %s (cpu %.2f), want %s (cpu %.2f)", tc.name, got, cpu, tc.want, tc.cpu)
		}
	}
}
