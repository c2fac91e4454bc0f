package live

import (
	"fmt"
	"testing"

	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
)

// A system-wide view runs for days while processes come and go: what it
// remembers across frames is what is alive, plus the last two frames' exited.
// 10,000 short-lived processes, each with a name never seen before, two
// threads and two files of its own, one frame for every 100 of them.
func TestChurnIsForgotten(t *testing.T) {
	a := testAggregator(0)
	undescribed := 0
	a.names.undescribe = func(event.FileRef) { undescribed++ }
	const perFrame = 100
	now := uint64(0)
	for i := range 10_000 {
		pid := uint32(1000 + 3*i)
		name := fmt.Sprintf("churn-%d", i)
		t0 := now + uint64(i%perFrame)*ms
		a.Feed([]event.Event{
			&event.Fork{Header: event.Header{Time: t0, PID: 1, TID: 1, Comm: "sh"}, ChildPID: pid, ChildTID: pid},
			&event.Exec{Header: event.Header{Time: t0, PID: pid, TID: pid, Comm: name}},
			// each opens its own /proc/self/stat and a file of its own: two new inodes
			&event.File{Header: event.Header{Time: t0, PID: pid, TID: pid}, Ref: event.FileRef{Dev: 22, Ino: uint64(pid)}, Path: "/proc/" + fmt.Sprint(pid) + "/stat"},
			&event.File{Header: event.Header{Time: t0, PID: pid, TID: pid}, Ref: event.FileRef{Dev: 8, Ino: uint64(pid)}, Path: "/tmp/" + name},
			&event.Fork{Header: event.Header{Time: t0, PID: pid, TID: pid, Comm: name}, ChildPID: pid, ChildTID: pid + 1},
			&event.CPUTime{Header: event.Header{Time: t0, PID: pid, TID: pid + 1, Comm: "cw-" + name}, OnCPU: ms / 2},
			&event.OffCPU{Header: event.Header{Time: t0, PID: pid, TID: pid + 1, Comm: "cw-" + name}, Off: ms / 4, State: 'S', Reason: event.ReasonSleep},
			&event.Exit{Header: event.Header{Time: t0, PID: pid, TID: pid + 1, Comm: "cw-" + name}},
			&event.Exit{Header: event.Header{Time: t0, PID: pid, TID: pid, Comm: name}, GroupDead: true},
		})
		if (i+1)%perFrame == 0 {
			now += 1000 * ms
			f := a.Cut(now, nil)
			if p := f.Procs[pid]; p == nil || p.Comm != name {
				t.Fatalf("the frame's last process: %+v, want it named %s", p, name)
			}
		}
	}
	n := a.names
	// the shell, and the exited of the last frames
	if most := keepGone*perFrame + 1; n.procs.Len() > most || n.threads.Len() > 2*most {
		t.Errorf("remembers %d processes and %d threads after 10,000 exited, want at most %d and %d",
			n.procs.Len(), n.threads.Len(), most, 2*most)
	}
	if len(n.goneProcs) > keepGone*perFrame || len(n.goneThreads) > 2*keepGone*perFrame {
		t.Errorf("%d processes and %d threads waiting to be forgotten", len(n.goneProcs), len(n.goneThreads))
	}
	// files: as many as the kernel's table holds, however many come and
	// go; each one forgotten is taken out of the kernel's table, to be
	// described again when next met
	if n.files.Len() > capture.LiveDescribedFiles {
		t.Errorf("remembers %d file names after 20,000 were described, want at most %d", n.files.Len(), capture.LiveDescribedFiles)
	}
	if undescribed != 20_000-n.files.Len() {
		t.Errorf("%d file names forgotten, %d taken out of the kernel's table", 20_000-n.files.Len(), undescribed)
	}
	w := a.waits
	if len(w.counted)+len(w.pending)+len(w.dirtied)+len(w.issued) > 0 {
		t.Errorf("waits remember %d, %d, %d, %d threads", len(w.counted), len(w.pending), len(w.dirtied), len(w.issued))
	}
}
