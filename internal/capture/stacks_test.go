package capture

import (
	"testing"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
)

// TestClassifyRemembersByEverythingItReads: reasons are remembered per stack
// id, but a stack means different reasons with another state, syscall, file
// or process (sockets or not): each must get the reason classify gives it,
// however often and in whatever order it comes.
func TestClassifyRemembersByEverythingItReads(t *testing.T) {
	st := &stacks{frames: map[int32][]string{
		1: {"schedule", "io_schedule", "folio_wait_bit_common", "filemap_read", "vfs_read"},
		2: {"schedule", "schedule_hrtimeout_range", "do_sys_poll", "__x64_sys_poll"},
		3: {"schedule", "io_schedule", "folio_wait_bit_common", "ext4_write_begin", "ksys_write"},
	}, sockets: map[uint32]bool{100: true}, reasons: map[reasonKey]event.Reason{}}
	var cases []event.OffCPU
	for _, id := range []int32{-1, 1, 2, 3} {
		for _, state := range []byte{'S', 'D', 'R'} {
			for _, sys := range []int32{-1, 0, 1, 7, 74} {
				for _, pid := range []uint32{100, 200} {
					for _, kind := range []event.FileKind{event.KindUnknown, event.KindPipe, event.KindSocketInet} {
						cases = append(cases, event.OffCPU{Header: event.Header{PID: pid}, State: state, StackID: id, Syscall: sys, FileKind: kind})
					}
				}
			}
		}
	}
	reasons := map[event.Reason]bool{}
	for round := range 3 {
		for i := range cases {
			o := cases[(i*7+round)%len(cases)]
			want := classify.Reason(classify.Input{State: o.State, Syscall: o.Syscall, Frames: st.frames[o.StackID],
				PollOnSockets: st.sockets[o.PID], FileKind: o.FileKind})
			st.classify(&o)
			if o.Reason != want {
				t.Fatalf("stack %d, state %c, syscall %d, pid %d, kind %v: %s, want %s", o.StackID, o.State, o.Syscall, o.PID, o.FileKind, o.Reason, want)
			}
			reasons[want] = true
		}
	}
	if len(reasons) < 6 {
		t.Errorf("the cases gave only %d reasons (%v): not a test of the key", len(reasons), reasons)
	}
}
