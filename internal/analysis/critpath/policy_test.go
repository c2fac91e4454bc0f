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
	for name, set := range map[string]map[string]bool{"lookThrough": pathPolicy.lookThrough,
		"working": pathPolicy.working, "chargedToHop": pathPolicy.chargedToHop} {
		if len(set) == 0 {
			t.Errorf("%s is empty", name)
		}
		for r := range set {
			if !known[r] {
				t.Errorf("%s names %q, no reason", name, r)
			}
		}
	}
	for e := range pathPolicy.heldUpBy {
		if !pathPolicy.follow[e] {
			t.Errorf("a %s edge holds up a wait the walk does not follow", e)
		}
	}
	for e := range pathPolicy.hopIntoThread {
		if !pathPolicy.follow[e] {
			t.Errorf("the walk hops into a thread over a %s edge, which it does not follow", e)
		}
	}
	for e := range pathPolicy.byInterrupt {
		if pathPolicy.follow[e] || pathPolicy.heldUpBy[e] {
			t.Errorf("an interrupt's %s edge is followed or names its waker: that is whatever ran on that CPU", e)
		}
	}
	if !pathPolicy.chargedToHop[pathPolicy.forWork] {
		t.Errorf("a hopped-into process waiting for work is not charged to the hop")
	}
	if !busyEnough(25, 100) || busyEnough(24, 100) {
		t.Errorf("busyEnough: the busiest must have worked a quarter of the span")
	}
}

// Every reason a wait can be classified as types an edge, and those whose
// waker is the cause are the ones the walk follows.
func TestEdgesOfReasons(t *testing.T) {
	want := map[event.Reason]edge{event.ReasonChild: edgeChild, event.ReasonLock: edgeLock, event.ReasonIPC: edgePipe,
		event.ReasonOther: edgeWakeup, event.ReasonDiskRead: edgeCompletion, event.ReasonSync: edgeCompletion,
		event.ReasonMemory: edgeCompletion, event.ReasonSleep: edgeTimer, event.ReasonCPUQuota: edgeQuota,
		event.ReasonRunqueue: edgeNone, event.ReasonNetwork: edgeDevice}
	for r, e := range want {
		if got := edgeOf(&pathInterval{reason: string(r)}); got != e {
			t.Errorf("a %s wait's edge is %s, want %s", r, got, e)
		}
	}
	if got := edgeOf(&pathInterval{reason: "network", wakerOnSocket: true}); got != edgeSocket || !pathPolicy.follow[got] {
		t.Errorf("a network wait woken by a sender on a socket: %s, followed %v", got, pathPolicy.follow[got])
	}
	for _, r := range event.Reasons {
		if r == event.ReasonCPU || r.Derived() {
			continue
		}
		if e := edgeOf(&pathInterval{reason: string(r)}); e.String() == "" {
			t.Errorf("%s has no edge", r)
		}
	}
}
