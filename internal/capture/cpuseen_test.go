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

// TestCPUAccountRetires: an exited thread's slot is due to be taken out of
// the kernel's map once a pass after its exit has read its last time, not
// before (it may still be on a CPU when its exit is read); a tid reused
// meanwhile by a new thread is not due; and a due thread stays accounted
// until its slot is taken out, since a new life that kept it goes on from
// its count.
func TestCPUAccountRetires(t *testing.T) {
	var a cpuAccount
	pass := func(tids ...uint32) []uint32 {
		for _, tid := range tids {
			a.report(tid, 100*uint64(a.round+1))
		}
		var due []uint32
		for _, x := range a.due() {
			due = append(due, x.tid)
		}
		a.endRound(true)
		return due
	}
	pass(1, 2, 3)
	a.exit(2, 1000)
	a.exit(3, 1000)
	if due := pass(1, 2, 3); len(due) != 0 {
		t.Fatalf("%v due in the pass its exit was read in", due)
	}
	a.fork(3) // tid 3 reused by a new thread
	var due []dueExit
	for _, tid := range []uint32{1, 2, 3} {
		a.report(tid, 100*uint64(a.round+1))
	}
	due = a.due()
	a.endRound(true)
	if len(due) != 1 || due[0].tid != 2 || due[0].at != 1000 {
		t.Fatalf("due %v, want tid 2 at 1000", due)
	}
	// not taken out (a new life kept the slot): still accounted, and its
	// count goes on from the last life's
	if d := a.report(2, 450); d != 150 {
		t.Errorf("a kept slot's growth: %d ns, want 150 (from its last life's 300)", d)
	}
	a.forget(2) // taken out
	if d := a.report(2, 20); d != 20 {
		t.Errorf("a new slot after the last was taken out: %d ns, want 20", d)
	}
	if due := pass(1, 3); len(due) != 0 || len(a.exited) != 0 {
		t.Errorf("%v due later, %d exits still waiting", due, len(a.exited))
	}
	// an exit whose thread never reached the map is due, once
	a.exit(9, 2000)
	pass(1)
	if due := pass(1); len(due) != 1 || due[0] != 9 || len(a.exited) != 0 {
		t.Errorf("exit of a thread never in the map: due %v, kept %v", due, a.exited)
	}
	// a pass cut short that missed an exited thread does not make it due
	a.exit(1, 3000)
	pass(1)
	a.due()
	a.endRound(false) // a pass that read nothing
	if _, waiting := a.exited[1]; !waiting {
		t.Error("an exit was dropped by a pass that missed its thread")
	}
	if due := pass(1); len(due) != 1 {
		t.Errorf("due %v after a complete pass, want [1]", due)
	}
}

// TestCPUAccountLifeBefore: a slot the next life of its tid took before a
// pass read the last one's end reports the last life's unread time apart
// (the caller names it its owner's), once, and the new life's from there.
func TestCPUAccountLifeBefore(t *testing.T) {
	var a cpuAccount
	a.lifeBefore(5, 100, 0)
	a.report(5, 40) // life 100 read at 40
	a.endRound(true)
	// life 100 ran to 70 and died; life 200 took the slot at 70 and ran to 90
	if d := a.lifeBefore(5, 200, 70); d != 30 {
		t.Errorf("the life before: %d ns, want 30", d)
	}
	if d := a.report(5, 90); d != 20 {
		t.Errorf("the new life: %d ns, want 20", d)
	}
	a.endRound(true)
	if d := a.lifeBefore(5, 200, 70); d != 0 {
		t.Errorf("the life before again: %d ns, want 0", d)
	}
	// a slot first read with its second life: the first life's time is its own
	if d := a.lifeBefore(6, 300, 15); d != 15 {
		t.Errorf("an unread first life: %d ns, want 15", d)
	}
	if d := a.report(6, 18); d != 3 {
		t.Errorf("its second life: %d ns, want 3", d)
	}
}
