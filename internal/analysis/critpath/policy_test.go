package critpath

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// The policy's sets agree with each other and with the vocabulary: a reason
// named nowhere else would never match a wait.
func TestPathPolicyIsConsistent(t *testing.T) {
	known := map[string]bool{}
	for _, r := range event.Reasons {
		known[string(r)] = true
	}
	sets := map[string]map[string]bool{"follow": pathPolicy.follow, "lookThrough": pathPolicy.lookThrough,
		"working": pathPolicy.working, "heldUpBy": pathPolicy.heldUpBy, "chargedToHop": pathPolicy.chargedToHop,
		"hopIntoThread": pathPolicy.hopIntoThread, "onSocketOnly": pathPolicy.onSocketOnly}
	for name, set := range sets {
		if len(set) == 0 {
			t.Errorf("%s is empty", name)
		}
		for r := range set {
			if !known[r] {
				t.Errorf("%s names %q, no reason", name, r)
			}
		}
	}
	for r := range pathPolicy.heldUpBy {
		if !pathPolicy.follow[r] {
			t.Errorf("%s holds up a wait the walk does not follow", r)
		}
	}
	for r := range pathPolicy.hopIntoThread {
		if !pathPolicy.follow[r] {
			t.Errorf("the walk hops into a thread for %s, which it does not follow", r)
		}
	}
	if !pathPolicy.chargedToHop[pathPolicy.forWork] {
		t.Errorf("a hopped-into process waiting for work is not charged to the hop")
	}
	if pathPolicy.follow[string(event.ReasonDiskRead)] || pathPolicy.follow[string(event.ReasonSleep)] {
		t.Errorf("a disk completion's or a timer's waker is followed: it is whatever ran on that CPU")
	}
	if !busyEnough(25, 100) || busyEnough(24, 100) {
		t.Errorf("busyEnough: the busiest must have worked a quarter of the span")
	}
}
