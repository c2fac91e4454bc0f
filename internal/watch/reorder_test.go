package watch

import (
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// Calls of one server thread that arrive out of order (two CPUs' rings,
// each read on its own) are followed in the order they happened: fast
// requests never fire, whichever ring came first; a slow one fires with
// its true time.
func TestServingInOrderAcrossRings(t *testing.T) {
	o := newInOrder(uint64(time.Second))
	cpu0 := []event.Event{sock(0, ms, 1, "read", 100, 1), sock(100*ms, ms, 1, "read", 100, 1), sock(3000*ms, ms, 1, "read", 100, 1)}
	cpu1 := []event.Event{sock(10*ms, ms, 1, "write", 10, 1), sock(110*ms, ms, 1, "write", 10, 1), sock(4500*ms, ms, 1, "write", 10, 1)}
	// The second CPU's ring is read first: every answer before its read.
	for _, ev := range append(cpu1, cpu0...) {
		o.add(ev)
	}
	if got := o.slow(1000 * ms); len(got) != 0 {
		t.Fatalf("fast requests fired: %+v", got)
	}
	// The slow one: unanswered at 4.4 s, as of the reorder delay before.
	got := o.slow(4400 * ms)
	if len(got) != 1 || got[0].At != 3001*ms || !strings.Contains(got[0].Detail, "unanswered after 1.15") {
		t.Fatalf("at 4.4 s: %+v", got)
	}
	if again := o.slow(6000 * ms); len(again) != 0 {
		t.Errorf("fired again at its answer: %+v", again)
	}
	// Taken as they came, the connection's first call was an answer: its
	// end looked like a client's, and the slow request went unseen (or,
	// with a read first, an answer before its read made a request
	// "answered after" an underflow, as the watch once said).
	s := newServing(uint64(time.Second))
	var fired []*Trigger
	for _, ev := range append(cpu1, cpu0...) {
		if tr := s.call(ev.(*event.Syscall)); tr != nil {
			fired = append(fired, tr)
		}
	}
	fired = append(fired, s.slow(4400*ms)...)
	if len(fired) == 1 && fired[0].At == 3001*ms {
		t.Error("taken as they came, the calls gave the right answer: the test no longer shows the problem")
	}
}
