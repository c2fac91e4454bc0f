package source

import (
	"testing"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
)

// TestRingReasonIsClassifys: ring_reason says what classify.Reason says of
// a wait in io_uring_enter for every class of operation and kind of file,
// and a file of no kind the recording names is one of unknown kind.
func TestRingReasonIsClassifys(t *testing.T) {
	conn := macroConn(t, reasonMacros())
	enter, _ := event.SyscallNr("io_uring_enter")
	seen := map[event.Reason]bool{}
	for _, c := range event.UringClasses() {
		for _, k := range event.FileKinds() {
			want := classify.Reason(classify.Input{State: 'S', Syscall: enter, WakerSyscall: -1, Ring: &classify.RingOp{Class: c, Kind: k}})
			seen[want] = true
			var got string
			if err := conn.QueryRowContext(t.Context(), "SELECT ring_reason(?, ?)", string(c), k.String()).Scan(&got); err != nil || got != string(want) {
				t.Errorf("ring_reason(%s, %s) = %q (%v), want %s", c, k, got, err, want)
			}
			if k != event.KindUnknown {
				continue
			}
			if err := conn.QueryRowContext(t.Context(), "SELECT ring_reason(?, NULL)", string(c)).Scan(&got); err != nil || got != string(want) {
				t.Errorf("ring_reason(%s, NULL) = %q (%v), want %s", c, got, err, want)
			}
		}
	}
	for _, r := range []event.Reason{event.ReasonNetwork, event.ReasonDiskRead, event.ReasonDiskWrite, event.ReasonSync, event.ReasonOther} {
		if !seen[r] {
			t.Errorf("no operation is a wait for %s", r)
		}
	}
}
