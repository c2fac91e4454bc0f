package procsample

import (
	"context"
	"math"
	"os/exec"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/test/harness"
)

// sample runs argv and looks at it for d, returning the reasons of the
// looks the wall time was charged to.
func sample(t *testing.T, d time.Duration, argv ...string) (map[event.Reason]float64, Stats) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(100 * time.Millisecond) // let it exec
	s, err := New(Options{PID: cmd.Process.Pid, Hz: 50})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	shares := map[event.Reason]float64{}
	err = s.Run(ctx, func(batch []event.Event) {
		for _, e := range batch {
			sm := e.(*event.ProcSample)
			if !sm.OnPath {
				continue
			}
			r, cpu := classify.SampleReason(classify.Sample{State: sm.State, Syscall: sm.Syscall, Frames: sm.Stack, Wchan: sm.Wchan,
				FileKind: sm.FileKind, PollOnSockets: sm.PollOnSockets, RanNS: sm.RanNS, RunDelayNS: sm.RunDelayNS, IntervalNS: sm.IntervalNS, WasRunnable: sm.WasRunnable, Throttled: sm.Throttled})
			shares[event.ReasonCPU] += cpu
			shares[r] += 1 - cpu
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return shares, s.Stats()
}

func TestSamplerSeesWhatAProgramDoes(t *testing.T) {
	for _, tc := range []struct {
		name string
		argv []string
		want event.Reason
	}{
		{"a CPU loop", []string{"sh", "-c", "while :; do :; done"}, event.ReasonCPU},
		{"a sleep", []string{"sleep", "5"}, event.ReasonSleep},
		{"a shell waiting for its child's sleep", []string{"sh", "-c", "sleep 5; true"}, event.ReasonSleep},
		// Its last command reads a pipe the one before it writes: the path
		// goes to that one, as the traced critical path does.
		{"a pipeline: its last command, reading a pipe", []string{"sh", "-c", "sleep 5 | cat"}, event.ReasonSleep},
		// The main thread joins (a futex wait): the path goes to the thread
		// doing the work, not "lock".
		{"a thread's CPU loop, joined", []string{python3(t), "-c", joinedThread("while time.monotonic() < end: pass")}, event.ReasonCPU},
		{"a thread's sleep, joined", []string{python3(t), "-c", joinedThread("time.sleep(5)")}, event.ReasonSleep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shares, st := sample(t, 600*time.Millisecond, tc.argv...)
			total := 0.0
			for _, v := range shares {
				total += v
			}
			if st.Ticks < 10 || math.Abs(total-float64(st.Ticks)) > 1e-6 {
				t.Fatalf("%d ticks, %.1f charged: %v", st.Ticks, total, shares)
			}
			got := shares[tc.want]
			if tc.want == event.ReasonCPU {
				got += shares[event.ReasonRunqueue] // a busy machine's other work
			}
			if got < 0.8*total {
				t.Errorf("want mostly %s, got %v", tc.want, shares)
			}
		})
	}
}

// Threads that come and go between a listing and a read are dropped, not
// a failure: a process starting and joining threads back to back.
func TestSamplerOutlivesVanishingTasks(t *testing.T) {
	_, st := sample(t, time.Second, harness.Python(t), "-c",
		"import threading\nwhile True:\n t = threading.Thread(target=lambda: None); t.start(); t.join()")
	if st.Ticks < 20 {
		t.Errorf("%d ticks", st.Ticks)
	}
	t.Logf("%d ticks, %d samples, %d vanished", st.Ticks, st.Samples, st.Vanished)
}

// A thread asleep is looked at less often once it has not run for half a
// second, down to once a second, and its looks still stand for all the
// time (their intervals add up); the main thread is looked at every tick.
// When it wakes it is seen within a second, and looked at every tick again.
// The looks that found it had not run are handed on as one: a row per
// wait, not per look.
func TestSamplerBacksOffFromSleepingThreads(t *testing.T) {
	cmd := exec.Command(harness.Python(t), "-c", `
import threading, time, os
ev = threading.Event()
def f():
    ev.wait()
    while True: pass
threading.Thread(target=f, daemon=True).start()
time.sleep(2.5)
ev.set()
time.sleep(10)
`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	time.Sleep(200 * time.Millisecond)
	const hz = 20
	s, err := New(Options{PID: cmd.Process.Pid, Hz: hz})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	pid := uint32(cmd.Process.Pid)
	var mainLooks, asleep, spinning int
	var asleepNS uint64
	s.Run(ctx, func(batch []event.Event) {
		for _, e := range batch {
			sm := e.(*event.ProcSample)
			switch {
			case sm.TID == pid:
				mainLooks++
			case sm.State == 'R':
				spinning++
			default:
				asleep++
				asleepNS += sm.IntervalNS
			}
		}
	})
	ticks := int(s.Stats().Ticks)
	looked := int(s.Stats().Samples) - mainLooks - spinning
	t.Logf("%d ticks: main %d looks, the other thread %d looks asleep in %d rows (%.2f s) and %d spinning", ticks, mainLooks, looked, asleep, float64(asleepNS)/1e9, spinning)
	if mainLooks != ticks {
		t.Errorf("the main thread was looked at %d times in %d ticks", mainLooks, ticks)
	}
	// ~2.3 s asleep under observation: every tick for the first half
	// second (10), then at gaps of 2, 4, 8, 16, 20 ticks: ~15 looks.
	if looked > 25 || looked < 5 {
		t.Errorf("%d looks at the sleeping thread: no back-off", looked)
	}
	// Its first look, and the rest of its wait as one.
	if asleep > 3 {
		t.Errorf("%d rows for one wait", asleep)
	}
	if asleepNS < 1700e6 {
		t.Errorf("its looks stand for %.2f s of its ~2.3 s asleep", float64(asleepNS)/1e9)
	}
	// Woken at 2.5 s from its start, 1 s before the end: seen within a
	// second, then every tick.
	if spinning < 5 {
		t.Errorf("%d looks at it spinning in its last second", spinning)
	}
}

// joinedThread is a Python program whose main thread joins one thread
// that runs body for about 5 s.
func joinedThread(body string) string {
	return "import threading, time\nend = time.monotonic() + 5\ndef work():\n    " + body +
		"\nt = threading.Thread(target=work)\nt.start()\nt.join()\n"
}

func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is needed")
	}
	return p
}
