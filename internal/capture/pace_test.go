package capture

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/target"
)

func TestPaceRule(t *testing.T) {
	for _, tc := range []struct {
		paused       bool
		idle, waited float64
		want         bool
	}{
		{false, 0, 0.5, true},     // loading, tasks queued half the time: wait
		{false, 1.5, 0.05, false}, // loading beside one busy CPU of two: go on
		{false, 0, paceBusy, true},
		{true, 0.1, 0, false == (0.1 >= paceFree)}, // waiting, CPUs still busy: wait on
		{true, 0.9, 0.3, false},                    // waiting, a CPU idle: load
	} {
		if got := pause(tc.paused, tc.idle, tc.waited); got != tc.want {
			t.Errorf("pause(paused %v, idle %.2f, waited %.2f) = %v, want %v", tc.paused, tc.idle, tc.waited, got, tc.want)
		}
	}
}

// The pacer samples once a period, holds its answer between, and gives up
// (loads) where the counters cannot be read.
func TestPacerSamples(t *testing.T) {
	var idle, waited time.Duration
	var fail bool
	read := func(v *time.Duration) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			if fail {
				return 0, errors.New("gone")
			}
			return *v, nil
		}
	}
	p := &pacer{idle: read(&idle), waited: read(&waited)}
	t0 := time.Now()
	if p.hold(t0) {
		t.Fatal("the first look has nothing to compare: load")
	}
	waited += 50 * time.Millisecond // of 100: contended
	if !p.hold(t0.Add(paceEvery)) {
		t.Fatal("tasks waited half the period: want a hold")
	}
	idle += 90 * time.Millisecond
	if !p.hold(t0.Add(paceEvery + paceEvery/2)) {
		t.Fatal("within a period the answer stands")
	}
	if p.hold(t0.Add(2 * paceEvery)) {
		t.Fatal("0.9 of a CPU idle: want loading again")
	}
	fail = true
	if p.hold(t0.Add(3 * paceEvery)) {
		t.Fatal("counters unreadable: want loading")
	}
	var none *pacer
	if none.hold(t0) {
		t.Fatal("no pacer: never holds")
	}
}

// With every CPU kept busy by the target's calls, the loader holds the
// backlog in the spool, and loads every record once the target ends.
func TestSpoolHeldWhileCPUsBusy(t *testing.T) {
	requirePrivileges(t)
	if _, err := os.Stat("/proc/pressure/cpu"); err != nil {
		t.Skip("no pressure stall information on this kernel: the loader never holds")
	}
	const count = 400000
	jobs := runtime.NumCPU()
	script := ""
	for range jobs {
		script += "dd if=/dev/zero of=/dev/null bs=1 count=" + strconv.Itoa(count) + " status=none & "
	}
	script += "wait"
	eng, err := Open(Options{Level: Full, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatalf("opening engine: %v", err)
	}
	defer eng.Close()
	g, err := target.Start([]string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.AddTarget(uint32(g.PID())); err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	var maxHeld atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- eng.Run(ctx, func(b []event.Event) {
			for _, ev := range b {
				if s, ok := ev.(*event.Syscall); ok && s.Comm == "dd" && event.SyscallName(int32(s.Nr)) == "read" && s.Ret == 1 {
					reads.Add(1)
				}
			}
		})
	}()
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for ctx.Err() == nil {
			if h := eng.Held(); h > maxHeld.Load() {
				maxHeld.Store(h)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	if err := g.Open(); err != nil {
		t.Fatal(err)
	}
	if code, err := g.Wait(); err != nil || code != 0 {
		t.Fatalf("dd: exit %d, %v", code, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-watching
	lost, err := eng.Lost()
	if err != nil {
		t.Fatal(err)
	}
	for src, n := range lost {
		if n > 0 && src != event.LostRebuilt { // the kernel's unreported switches: rebuilt (noLoss)
			t.Errorf("%d %s records lost", n, src)
		}
	}
	if got, want := reads.Load(), int64(jobs*count); got != want {
		t.Errorf("%d one-byte reads recorded, want %d", got, want)
	}
	t.Logf("%d dd jobs on %d CPUs: at most %d bytes held in the spool", jobs, runtime.NumCPU(), maxHeld.Load())
	if maxHeld.Load() == 0 {
		t.Error("the loader never held the spool while every CPU ran the target's calls")
	}
	if eng.HeldMost() == 0 {
		t.Error("HeldMost is 0 after the spool was seen held")
	}
}
