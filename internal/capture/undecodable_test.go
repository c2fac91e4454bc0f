package capture

import (
	"fmt"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// A record that does not decode is not passed on, and it is counted: the
// lost counts (Lost, LostDecode) show it where the kernel's losses are shown.
func TestUndecodableRecordsAreCounted(t *testing.T) {
	e := &Engine{}
	out := make(chan []event.Event, 4)
	b := e.newBatches(out)
	short := make([]byte, 40)
	short[kindOffset] = evSyscall
	unknown := make([]byte, 200)
	unknown[kindOffset] = 99
	for _, rec := range [][]byte{nil, short, unknown} {
		b.add(rec)
	}
	b.send()
	if len(out) != 0 {
		t.Errorf("%d batches sent for records that do not decode", len(out))
	}
	if n := e.undecodable.Load(); n != 3 {
		t.Fatalf("%d undecodable records counted, want 3", n)
	}
}

// The decoder's table of names stays bounded however many names a long
// capture meets, and every name still decodes right.
func TestDecoderNamesAreBounded(t *testing.T) {
	d := newDecoder()
	for i := range 10_000 {
		var raw [16]int8
		name := fmt.Sprintf("churn-%d", i)
		for j := range len(name) {
			raw[j] = int8(name[j])
		}
		if got := d.comm(raw); got != name {
			t.Fatalf("decoded %q, want %q", got, name)
		}
	}
	if len(d.comms) > maxComms {
		t.Fatalf("%d names held, bound %d", len(d.comms), maxComms)
	}
}
