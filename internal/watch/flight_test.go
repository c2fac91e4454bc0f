package watch

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

const ms = uint64(1_000_000)

func offcpu(t uint64, pid uint32) *event.OffCPU {
	return &event.OffCPU{Header: event.Header{Time: t, PID: pid, TID: pid, Comm: "w"}, Off: ms}
}

// The window ages out what is older than it, not more; nothing is counted
// dropped for that.
func TestFlightKeepsItsWindow(t *testing.T) {
	f := newFlight(1000*ms, 1<<30)
	for i := uint64(0); i < 30; i++ {
		f.add([]event.Event{offcpu(i*100*ms, 1)}, i*100*ms)
	}
	w := f.snapshot(0)
	if w.dropped != 0 || f.dropped != 0 {
		t.Errorf("dropped %d within budget", f.dropped)
	}
	if len(w.events) != 11 || w.events[0].Hdr().Time != 1900*ms || w.end != 2900*ms {
		t.Errorf("kept %d events from %d to %d, want the 11 of the last second", len(w.events), w.events[0].Hdr().Time/ms, w.end/ms)
	}
}

// Over budget, the oldest go early, are counted, and an incident's window
// begins after them (its start says so).
func TestFlightBudgetDropsAreCounted(t *testing.T) {
	one := size(offcpu(0, 1)) + 16 // and its place in the batch
	f := newFlight(1_000_000*ms, 10*one)
	for i := uint64(0); i < 25; i++ {
		f.add([]event.Event{offcpu(i*ms, 1)}, i*ms)
	}
	if f.bytes > f.budget {
		t.Errorf("%d bytes kept, budget %d", f.bytes, f.budget)
	}
	w := f.snapshot(0)
	if f.dropped != 15 || w.dropped != 15 || len(w.events) != 10 {
		t.Errorf("dropped %d (window says %d), kept %d: want 15 and 10", f.dropped, w.dropped, len(w.events))
	}
	if w.start != 14*ms+1 {
		t.Errorf("the window starts at %d ns, want just after the last dropped (14 ms)", w.start)
	}
}

// A file described long before an incident is named in it, once, even when
// its description aged out of the window; a newer description replaces it.
func TestFlightKeepsDescriptions(t *testing.T) {
	f := newFlight(100*ms, 1<<30)
	ref := event.FileRef{Dev: 1, Ino: 42, Kind: event.KindRegular}
	old := &event.File{Header: event.Header{Time: 1 * ms, PID: 7}, Ref: ref, Path: "/old"}
	exec := &event.Exec{Header: event.Header{Time: 1 * ms, PID: 7}, Filename: "/bin/app"}
	f.add([]event.Event{old, exec}, 1*ms)
	for i := uint64(1); i <= 10; i++ {
		f.add([]event.Event{offcpu(i*100*ms, 7)}, i*100*ms)
	}
	w := f.snapshot(900 * ms)
	var files, execs int
	for _, ev := range w.events {
		switch v := ev.(type) {
		case *event.File:
			files++
			if v.Path != "/old" {
				t.Errorf("file named %q", v.Path)
			}
		case *event.Exec:
			execs++
		}
	}
	if files != 1 || execs != 1 {
		t.Errorf("%d files and %d execs in the incident, want the one of each described before it", files, execs)
	}
	// Described again inside the window: that one only.
	again := &event.File{Header: event.Header{Time: 1050 * ms, PID: 7}, Ref: ref, Path: "/new"}
	f.add([]event.Event{again, offcpu(1100*ms, 7)}, 1100*ms)
	files = 0
	for _, ev := range f.snapshot(950 * ms).events {
		if v, ok := ev.(*event.File); ok {
			files++
			if v.Path != "/new" {
				t.Errorf("file named %q, want its newest description", v.Path)
			}
		}
	}
	if files != 1 {
		t.Errorf("the file is in the incident %d times", files)
	}
}

// A process's description goes once its exit leaves the window.
func TestFlightForgetsExitedProcesses(t *testing.T) {
	f := newFlight(100*ms, 1<<30)
	f.add([]event.Event{&event.Exec{Header: event.Header{Time: 1 * ms, PID: 9}}}, 1*ms)
	f.add([]event.Event{&event.Exit{Header: event.Header{Time: 2 * ms, PID: 9}, GroupDead: true}}, 2*ms)
	f.add([]event.Event{offcpu(500*ms, 1)}, 500*ms)
	if len(f.procs) != 0 {
		t.Errorf("%d process descriptions kept after their exit left the window", len(f.procs))
	}
}

// Descriptions are bounded: a machine that opens millions of files keeps
// the newest, and the kernel is told of each one forgotten, to describe it
// again when next met.
func TestFlightBoundsDescriptions(t *testing.T) {
	f := newFlight(100*ms, 1<<30)
	undescribed := map[event.FileRef]bool{}
	f.undescribe = func(r event.FileRef) { undescribed[r] = true }
	for i := uint64(1); i <= maxFiles+10; i++ {
		f.add([]event.Event{&event.File{Header: event.Header{Time: i}, Ref: event.FileRef{Dev: 1, Ino: i}}}, i)
	}
	if len(f.files) > maxFiles {
		t.Fatalf("%d files described, bound %d", len(f.files), maxFiles)
	}
	if _, ok := f.files[fileKey{ref: event.FileRef{Dev: 1, Ino: maxFiles + 10}}]; !ok {
		t.Error("the newest file was forgotten")
	}
	if len(undescribed) != maxFiles+10-len(f.files) {
		t.Errorf("%d descriptions forgotten, the kernel told of %d", maxFiles+10-len(f.files), len(undescribed))
	}
	for k := range f.files {
		if undescribed[k.ref] {
			t.Fatalf("file %v kept, yet taken out of the kernel's table", k.ref)
		}
	}
}

func TestKthNewest(t *testing.T) {
	times := []uint64{5, 1, 9, 3, 7, 7, 2}
	if got := kthNewest(append([]uint64(nil), times...), 3); got != 7 {
		t.Errorf("3rd newest %d, want 7", got)
	}
	if got := kthNewest(append([]uint64(nil), times...), 1); got != 9 {
		t.Errorf("newest %d, want 9", got)
	}
	if got := kthNewest(append([]uint64(nil), times...), 7); got != 1 {
		t.Errorf("7th newest %d, want 1", got)
	}
}

// A batch's unused capacity is not kept: the engine's arrays hold 4096
// events and often carry a few.
func TestFlightTrimsBatches(t *testing.T) {
	f := newFlight(1000*ms, 1<<30)
	b := make([]event.Event, 0, 4096)
	b = append(b, offcpu(1*ms, 1))
	f.add(b, 1*ms)
	if c := cap(f.batches[0].events); c != 1 {
		t.Errorf("kept a batch of 1 event with capacity %d", c)
	}
}
