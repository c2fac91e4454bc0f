package capture

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestLoadBothFlavours(t *testing.T) {
	requirePrivileges(t)
	for _, fl := range []string{"tp_btf", "raw_tp"} {
		t.Run(fl, func(t *testing.T) {
			e, err := Open(Options{Flavour: fl})
			if err != nil {
				t.Fatalf("opening engine: %v", err)
			}
			defer e.Close()
			if e.Flavour() != fl {
				t.Fatalf("flavour %s, want %s", e.Flavour(), fl)
			}
			if m := e.Missing(); len(m) > 0 {
				t.Fatalf("tracepoints missing on this kernel: %v", m)
			}
		})
	}
}

// TestLoadLeavesNoGarbageResident: loading parses our object and the
// kernel's types (~10 MiB of garbage, under 1 MiB kept), and the rings are
// mapped right after, at the peak of a short run's memory. By then the heap
// must hold little more than what is live: its garbage collected and the
// pages it freed given back to the system.
func TestLoadLeavesNoGarbageResident(t *testing.T) {
	requirePrivileges(t)
	// What earlier tests in this binary left is not the load's: start
	// from a collected heap and count what the load adds.
	runtime.GC()
	debug.FreeOSMemory()
	before := heapHeld()
	e, err := Open(Options{})
	if err != nil {
		t.Fatalf("opening engine: %v", err)
	}
	defer e.Close()
	after := heapHeld()
	held := after - min(before, after)
	t.Logf("heap held after loading: %.1f MiB more than before (%.1f MiB)", float64(held)/(1<<20), float64(before)/(1<<20))
	if held > 4<<20 {
		t.Errorf("the heap holds %.1f MiB more after loading, want under 4", float64(held)/(1<<20))
	}
}

// heapHeld is the heap's live objects, dead ones not yet collected, and
// free pages not given back to the system.
func heapHeld() uint64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	var held uint64
	for _, v := range s {
		held += v.Value.Uint64()
	}
	return held
}

// TestLoadingRestoresTheCollector: the collector is off while the programs
// load (collectOnceWhileLoading); the caller's settings are back after,
// whether loading succeeded or not.
func TestLoadingRestoresTheCollector(t *testing.T) {
	requirePrivileges(t)
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(300 << 20))
	for _, o := range []Options{{}, {Flavour: "no-such-flavour"}} {
		e, err := Open(o)
		if err == nil {
			e.Close()
		}
		if p := debug.SetGCPercent(77); p != 77 {
			t.Errorf("Open(%+v) left GC percent %d, want 77", o, p)
		}
		if l := debug.SetMemoryLimit(300 << 20); l != 300<<20 {
			t.Errorf("Open(%+v) left the memory limit at %d, want %d", o, l, 300<<20)
		}
	}
}
