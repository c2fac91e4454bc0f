package watch

import (
	"os/exec"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// A process watch started (an incident's writer or explanation) is watch's
// own while it runs and a while after: its stall fires nothing, and no
// incident is named after it; another process's does and is.
func TestOwnChildrenAreNoCulprits(t *testing.T) {
	w := newWatcher(Options{Stall: time.Second, Window: time.Second})
	w.stalls.isKernel = func(uint32) bool { return false }
	cmd := exec.Command("true")
	if _, err := w.own.output(cmd, false); err != nil {
		t.Fatal(err)
	}
	child := uint32(cmd.Process.Pid)
	if !w.ours(child) || w.ours(child+1) && child+1 != w.self {
		t.Fatalf("ours(%d) %v, ours(%d) %v: want the ended child only", child, w.ours(child), child+1, w.ours(child+1))
	}
	w.batch([]event.Event{wait(3000*ms, 2000*ms, child, event.ReasonDiskWrite, 'D')})
	select {
	case tr := <-w.fired:
		t.Fatalf("watch's own writer fired %+v", tr)
	default:
	}
	evs := []event.Event{wait(3000*ms, 2000*ms, child, event.ReasonDiskWrite, 'D'), wait(3000*ms, 500*ms, 4242, event.ReasonDiskWrite, 'D')}
	if pid := mostStalled(evs, KindStall, w.ours); pid != 4242 {
		t.Errorf("incident named after pid %d, want 4242, not watch's child %d", pid, child)
	}
	w.batch([]event.Event{wait(5000*ms, 2000*ms, 4242, event.ReasonDiskWrite, 'D')})
	select {
	case <-w.fired:
	default:
		t.Errorf("another process's 2 s stall fired nothing")
	}
}
