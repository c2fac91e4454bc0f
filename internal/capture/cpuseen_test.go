package capture

import "testing"

// TestCPUAccount: each drain reports what a thread's on-CPU total grew by,
// and the account forgets the threads gone from the kernel's wait slots, so a
// long exporter or top does not keep every thread that ever ran.
func TestCPUAccount(t *testing.T) {
	var a cpuAccount
	// a busy machine: a thousand short-lived threads, then one left
	for tid := uint32(1); tid <= 1000; tid++ {
		if d := a.report(tid, 100); d != 100 {
			t.Fatalf("first sight of %d: %d ns, want 100", tid, d)
		}
	}
	a.endRound(true)
	for round := 0; round < 3; round++ {
		a.report(1, uint64(200+round))
		a.endRound(true)
	}
	if len(a.seen) != 1 {
		t.Errorf("%d threads kept, want 1 (the others left the map)", len(a.seen))
	}
	// as before: the growth only, nothing when the total did not grow
	if d := a.report(1, 202); d != 0 {
		t.Errorf("no growth: %d ns", d)
	}
	if d := a.report(1, 250); d != 48 {
		t.Errorf("growth: %d ns, want 48", d)
	}
	if d := a.report(1, 240); d != 0 {
		t.Errorf("a smaller total: %d ns", d)
	}
	if d := a.report(1, 260); d != 10 {
		t.Errorf("after a smaller total: %d ns, want 10 (from the highest reported)", d)
	}
	a.endRound(true)
	// a tid back in the map after it left is a new thread: all of it counts
	if d := a.report(7, 30); d != 30 {
		t.Errorf("tid 7 again: %d ns, want 30", d)
	}
	a.endRound(true)
	// a pass cut short forgets nothing: a thread it missed is still reported
	a.report(1, 300)
	a.endRound(false)
	if d := a.report(7, 35); d != 5 {
		t.Errorf("after an incomplete pass: %d ns, want 5", d)
	}
}

// TestCPUAccountRetires: an exited thread is taken out of the kernel's map
// once a pass after its exit has reported its last time, not before (it may
// still be on a CPU when its exit is read), and a tid reused meanwhile by a
// new thread is kept.
func TestCPUAccountRetires(t *testing.T) {
	var a cpuAccount
	pass := func(tids ...uint32) []uint32 {
		for _, tid := range tids {
			a.report(tid, 100*uint64(a.round+1))
		}
		dead := a.retire()
		a.endRound(true)
		return dead
	}
	pass(1, 2, 3)
	a.exit(2)
	a.exit(3)
	if dead := pass(1, 2, 3); len(dead) != 0 {
		t.Fatalf("retired %v in the pass its exit was read in", dead)
	}
	a.fork(3) // tid 3 reused by a new thread
	dead := pass(1, 2, 3)
	if len(dead) != 1 || dead[0] != 2 {
		t.Fatalf("retired %v, want [2]", dead)
	}
	if _, ok := a.seen[2]; ok {
		t.Error("tid 2 still accounted after it was retired")
	}
	if dead := pass(1, 3); len(dead) != 0 || len(a.exited) != 0 {
		t.Errorf("retired %v later, %d exits still waiting", dead, len(a.exited))
	}
	// an exit whose thread never reached the map is forgotten too
	a.exit(9)
	pass(1)
	pass(1)
	if len(a.exited) != 0 {
		t.Errorf("exit of a thread never in the map kept: %v", a.exited)
	}
	// a pass cut short that missed an exited thread does not retire it
	a.exit(1)
	pass(1)
	a.retire()
	a.endRound(false) // a pass that read nothing
	if _, waiting := a.exited[1]; !waiting {
		t.Error("an exit was dropped by a pass that missed its thread")
	}
	if dead := pass(1); len(dead) != 1 {
		t.Errorf("retired %v after a complete pass, want [1]", dead)
	}
}
