package live

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// A process that lives less than a frame is gone from /proc when the frame
// is labelled: it is named by the kernel's events (its exit, the fork that
// made it), never "[pid N]".
func TestShortLivedProcessesAreNamed(t *testing.T) {
	a := testAggregator(0) // commOf finds nothing, as for an exited process
	a.Feed([]event.Event{
		// ran and exited within the frame
		&event.CPUTime{Header: event.Header{Time: 100 * ms, PID: 30, TID: 30, Comm: "quick"}, OnCPU: 5 * ms},
		&event.Exit{Header: event.Header{Time: 110 * ms, PID: 30, TID: 30, Comm: "quick"}, GroupDead: true},
		// forked by a shell, waited, exited: never ran an event with a name
		&event.Fork{Header: event.Header{Time: 200 * ms, PID: 40, TID: 40, Comm: "sh"}, ChildPID: 41, ChildTID: 41},
		&event.OffCPU{Header: event.Header{Time: 300 * ms, PID: 41, TID: 41}, Off: 50 * ms, State: 'S', Reason: event.ReasonSleep},
		&event.Exit{Header: event.Header{Time: 310 * ms, PID: 41, TID: 41}, GroupDead: true},
	})
	f := a.Cut(1000*ms, nil)
	for pid, want := range map[uint32]string{30: "quick", 41: "sh"} {
		if p := f.Procs[pid]; p == nil || p.Comm != want {
			t.Errorf("pid %d: %+v, want it named %q", pid, p, want)
		}
	}
	// its last on-CPU time is drained after its exit, into the next frame
	a.Feed([]event.Event{&event.CPUTime{Header: event.Header{Time: 1500 * ms, PID: 30, TID: 30}, OnCPU: 1 * ms}})
	f = a.Cut(2000*ms, nil)
	if p := f.Procs[30]; p == nil || p.Comm != "quick" {
		t.Errorf("the frame after its exit: %+v, want it named", p)
	}
	a.Cut(3000*ms, nil)
	if _, ok := a.names.procs.Peek(30); ok {
		t.Error("an exited process is still remembered two frames after its exit")
	}
}

// A file a frame can only name by its inode (its description lost, or
// never sent) is taken out of the kernel's table of files described, so it
// is described again when next met; a named one is left there.
func TestUnnamedFileIsDescribedAgain(t *testing.T) {
	a := testAggregator(0)
	var undescribed []event.FileRef
	a.names.undescribe = func(r event.FileRef) { undescribed = append(undescribed, r) }
	named := event.FileRef{Dev: 8 << 20, Ino: 1, Kind: event.KindRegular}
	lost := event.FileRef{Dev: 8 << 20, Ino: 2, Kind: event.KindRegular}
	a.Feed([]event.Event{&event.File{Header: event.Header{Time: 1}, Ref: named, Path: "/named"}})
	f := newFrame(0)
	f.Files[named], f.Files[lost] = &FileStat{}, &FileStat{}
	a.names.label(f)
	if f.Names[Object{File: named}] != "/named" || f.Names[Object{File: lost}] != "inode 2 on 8:0" {
		t.Fatalf("names %v", f.Names)
	}
	if len(undescribed) != 1 || undescribed[0] != lost {
		t.Errorf("taken out of the kernel's table: %v, want only the unnamed file", undescribed)
	}
}

// A process met first through a worker thread is named after its main
// thread, as /proc has it, not after the worker (top showed pid 1 as
// "tokio-rt-wo…"); the worker keeps its own name as a thread.
func TestProcessNamedAfterItsMainThread(t *testing.T) {
	a := testAggregator(0)
	a.names.commOf = func(pid uint32) string {
		if pid == 50 {
			return "process_api"
		}
		return ""
	}
	a.Feed([]event.Event{&event.CPUTime{Header: event.Header{Time: 100 * ms, PID: 50, TID: 59, Comm: "tokio-rt-worker"}, OnCPU: 5 * ms}})
	f := a.Cut(1000*ms, nil)
	p := f.Procs[50]
	if p == nil || p.Comm != "process_api" {
		t.Fatalf("pid 50: %+v, want it named after its main thread", p)
	}
	if th := p.Threads[59]; th == nil || th.Comm != "tokio-rt-worker" {
		t.Errorf("thread 59: %+v, want its own name", th)
	}
}
