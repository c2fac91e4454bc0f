package capture

import (
	"context"
	"os/exec"
	"runtime"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// sleepsOf80 sleeps 20 ms 80 times.
const sleepsOf80 = `
import time
for _ in range(80):
    time.sleep(0.02)
`

// Beside a busy loop on every CPU (issue 50's kernel stamps under load):
//   - the command, held at its gate, waits for a CPU from the gate's
//     opening to its first switch-in, or runs: either is counted (it was
//     neither a wait nor CPU time, and read as "not accounted");
//   - a sleep is not counted as a wait for a CPU before its timer fired. A
//     sleeper whose dequeue the scheduler delayed (EEVDF), moved to another
//     CPU meanwhile, is queued there while it sleeps: the kernel's
//     last_queued is then its move, not its wakeup (seen: 1.47 s of a
//     select() of 1.5 s counted waiting for a CPU).
func TestSleeperBesideBusyCPUs(t *testing.T) {
	requirePrivileges(t)
	busyCPUs(t)
	c := runCaptured(t, Options{}, python(t), "-c", sleepsOf80)
	c.noLoss(t)
	sleeps := 0
	for _, o := range eventsOf[*event.OffCPU](c) {
		if o.TID != c.pid {
			continue
		}
		if o.State != 'S' || o.Syscall != 230 || o.Off < 19e6 {
			continue
		}
		sleeps++
		if slept := o.Off - o.Runq; slept < 15e6 {
			t.Errorf("a sleep of 20 ms counted %.1f ms of %.1f ms waiting for a CPU", float64(o.Runq)/1e6, float64(o.Off)/1e6)
		}
	}
	if sleeps < 60 {
		t.Errorf("%d sleeps of 20 ms or more seen, want 80", sleeps)
	}
	// From its gate's opening to its exit, every nanosecond of the
	// command's thread is a wait or CPU time.
	var exit uint64
	for _, x := range eventsOf[*event.Exit](c) {
		if x.TID == c.pid {
			exit = x.Time
		}
	}
	var acc uint64
	for _, o := range eventsOf[*event.OffCPU](c) {
		if o.TID == c.pid {
			start, end := max(o.Time-o.Off, c.opened), min(o.Time, exit)
			if o.Waits > 1 {
				start = max(o.RunStart, c.opened) // a run: its waits lie within
			}
			if end > start {
				acc += min(o.Off, end-start)
			}
		}
	}
	for _, cpu := range eventsOf[*event.CPUTime](c) {
		if cpu.TID == c.pid {
			acc += cpu.OnCPU
		}
	}
	// Its CPU time runs on past its exit event (the rest of do_exit): more
	// is no loss.
	span := exit - c.opened
	t.Logf("from the gate to the exit %.3f ms, accounted %.3f ms", float64(span)/1e6, float64(acc)/1e6)
	if exit == 0 || acc+0.5e6 < span {
		t.Errorf("from the gate to the exit %.3f ms, of which %.3f ms neither a wait nor CPU time",
			float64(span)/1e6, (float64(span)-float64(acc))/1e6)
	}
}

// busyCPUs runs a busy loop on each CPU until the test ends.
func busyCPUs(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var loops []*exec.Cmd
	for range runtime.NumCPU() {
		cmd := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		loops = append(loops, cmd)
	}
	t.Cleanup(func() {
		cancel()
		for _, l := range loops {
			l.Wait()
		}
	})
}
