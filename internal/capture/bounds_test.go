package capture

import (
	"fmt"
	"sync"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
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

// Stacks sent whole keep coming in a long capture (each under a new id):
// the frames kept for them are bounded, and the latest still resolve.
func TestOwnStacksAreBounded(t *testing.T) {
	var sent sync.Map
	st := &stacks{sent: &sent, syms: &sysinfo.Kallsyms{}, frames: map[int32][]string{}, sockets: map[uint32]bool{},
		reasons: map[reasonKey]event.Reason{}}
	const n = 30_000
	for i := range n {
		st.own(&ownStack{ID: stackOwnBase + int32(i), IPs: []uint64{0xffffffff81000000 + uint64(i)}})
	}
	held := 0
	sent.Range(func(any, any) bool { held++; return true })
	if len(st.frames) > maxCachedStacks || held > maxOwned {
		t.Fatalf("%d stacks cached, %d sent held; bounds %d and %d", len(st.frames), held, maxCachedStacks, maxOwned)
	}
	if f := st.Frames(stackOwnBase + n - 1); len(f) != 1 {
		t.Fatalf("the last stack sent: %v", f)
	}
}
