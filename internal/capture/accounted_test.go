package capture

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// churnThreads makes and joins threads in rounds for argv[1] seconds, each
// life a sleep, a spin and a wait on a lock a sibling holds while it sleeps:
// thousands of short lives, whose tids the kernel hands out again soon when
// pid_max is low and other processes fork beside them.
const churnThreads = `
import sys, threading, time
end = time.monotonic() + float(sys.argv[1])
lock = threading.Lock()
def life():
    time.sleep(0.002)
    t = time.monotonic() + 0.002
    while time.monotonic() < t: pass
    with lock:
        time.sleep(0.001)
while time.monotonic() < end:
    ts = [threading.Thread(target=life) for _ in range(6)]
    [t.start() for t in ts]
    [t.join() for t in ts]
`

// Every nanosecond of a thread's life is a wait recorded or CPU time counted
// (issue 49): per thread id, its lives (fork to exit) add up to its waits and
// its CPU time, with tids reused fast (pid_max lowered, fork churn beside),
// so that a slot taken out while a wait was open, or a wait the kernel did
// not report, would show as time missing.
func TestEveryThreadLifeAccounted(t *testing.T) {
	requirePrivileges(t)
	lowerPIDMax(t, 2048)
	stop := forkChurn(t)
	c := runCaptured(t, Options{}, python(t), "-c", churnThreads, "5")
	stop()
	c.noLoss(t)
	t.Logf("switches the kernel did not report, rebuilt: %d", c.lost[event.LostRebuilt])

	type life struct{ born, died uint64 }
	lives := map[uint32][]life{}
	born := map[uint32]uint64{}
	for _, ev := range c.events {
		switch e := ev.(type) {
		case *event.Fork:
			if e.ChildPID == c.pid && e.ChildTID != c.pid {
				born[e.ChildTID] = e.Time
			}
		case *event.Exit:
			if b, ok := born[e.TID]; ok && e.PID == c.pid {
				lives[e.TID] = append(lives[e.TID], life{b, e.Time})
				delete(born, e.TID)
			}
		}
	}
	in := func(tid uint32, at uint64) bool {
		for _, l := range lives[tid] {
			if at > l.born && at <= l.died+1e6 {
				return true
			}
		}
		return false
	}
	accounted := map[uint32]uint64{}
	for _, o := range eventsOf[*event.OffCPU](c) {
		if o.PID == c.pid && in(o.TID, o.Time) {
			accounted[o.TID] += o.Off
		}
	}
	for _, cpu := range eventsOf[*event.CPUTime](c) {
		if cpu.PID == c.pid {
			accounted[cpu.TID] += cpu.OnCPU
		}
	}
	var tids []uint32
	reused := 0
	for tid, ls := range lives {
		tids = append(tids, tid)
		if len(ls) > 1 {
			reused++
		}
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	if len(tids) < 500 || reused < 50 {
		t.Fatalf("%d thread ids, %d of them reused: want hundreds of short lives on reused ids", len(tids), reused)
	}
	var bad, over []string
	var odd []uint32
	var lifeSum, missing float64
	for _, tid := range tids {
		var span uint64
		for _, l := range lives[tid] {
			span += l.died - l.born
		}
		// A life ends a little after its exit event (the rest of do_exit
		// runs on its CPU), and begins a little before its first wakeup.
		d := float64(accounted[tid]) - float64(span)
		tol := 0.3e6*float64(len(lives[tid])) + 0.03*float64(span)
		lifeSum += float64(span)
		if d < 0 {
			missing -= d
		}
		line := fmt.Sprintf("tid %d: %d lives, %.2f ms, accounted %.2f ms", tid, len(lives[tid]), float64(span)/1e6, float64(accounted[tid])/1e6)
		switch {
		case d < -tol:
			bad = append(bad, line)
		case d > tol:
			over = append(over, line)
		}
		if d < -tol || d > tol {
			odd = append(odd, tid)
		}
	}
	t.Logf("%d thread ids, %d reused; lives %.2f s, of which %.4f s not accounted", len(tids), reused, lifeSum/1e9, missing/1e9)
	// A wait rebuilt from a switch the kernel did not report is placed by
	// the thread's CPU time, which the hypervisor's stolen time can shift
	// by a little: at most one life each may come out short, by a little.
	unseen := int(c.lost[event.LostRebuilt])
	if len(bad) > unseen || missing > 0.001*lifeSum {
		t.Errorf("%d of %d thread ids' lives are more than their waits and CPU time (%d switches rebuilt): time lost\n%s",
			len(bad), len(tids), unseen, strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
	// Counted twice is time taken from another thread or process (a tid's
	// last life's time reported as the next one's), or a wait rebuilt over
	// one seen.
	if len(over) > unseen {
		t.Errorf("%d thread ids counted more than their lives (%d switches rebuilt):\n%s",
			len(over), unseen, strings.Join(over[:min(len(over), 20)], "\n"))
	}
	if t.Failed() {
		for _, tid := range odd[:min(len(odd), 3)] {
			for _, ev := range c.events {
				if ev.Hdr().TID == tid {
					t.Logf("tid %d: %T %+v", tid, ev, ev)
				}
			}
		}
	}
}

// lowerPIDMax sets kernel.pid_max to n for the test (restored after, failed
// or not), so that thread ids come round again within seconds.
func lowerPIDMax(t *testing.T, n int) {
	t.Helper()
	const path = "/proc/sys/kernel/pid_max"
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(fmt.Sprint(n)), 0o644); err != nil {
		t.Fatalf("lowering pid_max: %v", err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(path, old, 0o644); err != nil {
			t.Errorf("restoring pid_max to %s: %v", strings.TrimSpace(string(old)), err)
		}
	})
}

// forkChurn runs short processes one after another until stopped (or the
// test ends): other processes taking thread ids beside the workload.
func forkChurn(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", "while :; do /bin/true; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		cancel()
		cmd.Wait()
	}
	t.Cleanup(stop)
	return stop
}
