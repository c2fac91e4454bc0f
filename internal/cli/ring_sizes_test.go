package cli

import (
	"testing"
	"time"
)

// TestRingSizes: the events ring is 4 MiB at every level and the rings of
// calls share 8 MiB when the per-call hooks are on (a ring's every page is
// whyslow's memory); --ring-size sets both.
func TestRingSizes(t *testing.T) {
	for _, c := range []struct {
		name          string
		flags         captureFlags
		events, calls int
	}{
		{"default level", captureFlags{}, 4 << 20, 0},
		{"--syscalls", captureFlags{syscalls: true}, 4 << 20, 8 << 20},
		{"--full", captureFlags{full: true}, 4 << 20, 8 << 20},
		{"--full --ring-size 64K", captureFlags{full: true, ring: "64K"}, 64 << 10, 0},
	} {
		c.flags.slow = time.Millisecond
		o, err := c.flags.options()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if o.EventsRingBytes != c.events || o.CallsRingBytes != c.calls {
			t.Errorf("%s: events ring %d, calls' rings %d; want %d and %d (0: the events ring's size)",
				c.name, o.EventsRingBytes, o.CallsRingBytes, c.events, c.calls)
		}
	}
}
