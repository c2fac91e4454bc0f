package capture

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// At the default level no syscall is hooked: a read that waits on a FIFO is
// seen at the context switch, with its file, as one row spanning the wait,
// and a read that never waits is not seen at all.
func TestDefaultLevelWaitCarriesFile(t *testing.T) {
	dir := t.TempDir()
	fifo, plain := filepath.Join(dir, "slow.fifo"), filepath.Join(dir, "cached.txt")
	script := `
import os, sys, threading, time
os.mkfifo(sys.argv[1])
with open(sys.argv[2], "w") as f:
    f.write("cached")
r = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)  # opening does not wait
os.set_blocking(r, True)
w = os.open(sys.argv[1], os.O_WRONLY)
def writer():
    time.sleep(0.3)
    os.write(w, b"late")
threading.Thread(target=writer).start()
with open(sys.argv[2]) as f:
    f.read()
os.read(r, 4)   # waits for the writer
`
	c := runCaptured(t, Options{}, python(t), "-c", script, fifo, plain)
	var waited time.Duration
	for _, s := range eventsOf[*event.Syscall](c) {
		p := c.path(s.File)
		if p == plain {
			t.Errorf("a call that never waited was seen at the default level: %s on %s", event.SyscallName(int32(s.Nr)), p)
		}
		if p == fifo && !s.Blocked {
			t.Errorf("a default-level row that is not a wait: %+v", s)
		}
		if p == fifo {
			waited += time.Duration(s.Dur)
		}
	}
	if waited < 200*time.Millisecond {
		t.Errorf("waits on %s add up to %v, want about 300ms", fifo, waited)
	}
}

// CPU samples name the syscall a busy thread is in and the path it opens:
// the default level's split of kernel time.
func TestDefaultLevelSamples(t *testing.T) {
	dir := t.TempDir()
	script := `
import os, sys, time
end = time.time() + 0.6
i = 0
while time.time() < end:
    p = os.path.join(sys.argv[1], "f%d" % (i % 50))
    with open(p, "w") as f:
        f.write("x")
    os.unlink(p)
    i += 1
`
	c := runCaptured(t, Options{}, python(t), "-c", script, dir)
	var all, inCalls, onDir int
	for _, s := range eventsOf[*event.Sample](c) {
		all++
		if s.Syscall >= 0 {
			inCalls++
		}
		if strings.HasPrefix(s.Path, dir+"/") {
			onDir++
		}
	}
	if all < 20 {
		t.Fatalf("%d samples of 0.6 s on CPU, want at least 20 (a tick is at most 10 ms)", all)
	}
	if inCalls == 0 || onDir == 0 {
		t.Errorf("%d samples, %d in syscalls, %d naming a path under %s", all, inCalls, onDir, dir)
	}
}

// TestSamplesOncePerTick: the timer interrupt that samples fires at every
// high-resolution timer too; a thread sleeping 100 µs at a time beside a
// spinning one, both on CPU 0, makes thousands of them a second. The
// sampler takes one a tick: no more samples on CPU 0 than jiffies passed.
func TestSamplesOncePerTick(t *testing.T) {
	requirePrivileges(t) // before jiffies: /proc/timer_list is root's
	script := `
import os, threading, time
os.sched_setaffinity(0, {0})
def sleeper():
    end = time.time() + 1
    while time.time() < end:
        time.sleep(0.0001)
t = threading.Thread(target=sleeper)
t.start()
end = time.time() + 1
while time.time() < end:
    pass
t.join()
`
	before := jiffies(t)
	c := runCaptured(t, Options{}, python(t), "-c", script)
	ticks := jiffies(t) - before
	onCPU0 := 0
	for _, s := range eventsOf[*event.Sample](c) {
		if s.CPU == 0 {
			onCPU0++
		}
	}
	t.Logf("%d samples on CPU 0 in %d jiffies", onCPU0, ticks)
	if onCPU0 > int(ticks)+2 {
		t.Errorf("%d samples on CPU 0 in %d ticks: more than one a tick", onCPU0, ticks)
	}
	if onCPU0 < int(ticks)/4 {
		t.Errorf("%d samples on CPU 0 in %d ticks of a busy CPU", onCPU0, ticks)
	}
}

// jiffies reads the kernel's tick count (/proc/timer_list, root only).
func jiffies(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/timer_list")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "jiffies: "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no jiffies in /proc/timer_list")
	return 0
}

// TestTimerWakeupsHaveNoWaker: a sleep ends in the timer interrupt, on
// whatever task it interrupted; on a busy CPU that is another process,
// which did not wake the sleeper. With a spinner sharing the sleeper's CPU,
// no sleep may name the spinner as its waker (a critical path followed it:
// a client's server, sleeping, was said to wait on the spinner's CPU).
func TestTimerWakeupsHaveNoWaker(t *testing.T) {
	spin := exec.Command(python(t), "-c", "import os, time\nos.sched_setaffinity(0, {0})\nend = time.time() + 30\nwhile time.time() < end: pass")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { spin.Process.Kill(); spin.Wait() }()
	script := `
import os, time
os.sched_setaffinity(0, {0})
for _ in range(20):
    time.sleep(0.05)
`
	c := runCaptured(t, Options{}, python(t), "-c", script)
	sleeps, byTheSpinner := 0, 0
	for _, o := range eventsOf[*event.OffCPU](c) {
		if o.Off < 40*uint64(time.Millisecond) || o.State != 'S' {
			continue
		}
		sleeps++
		if o.WakerPID == uint32(spin.Process.Pid) {
			byTheSpinner++
		}
	}
	if sleeps < 10 {
		t.Fatalf("%d sleeps of 50 ms seen, want 20", sleeps)
	}
	if byTheSpinner > 0 {
		t.Errorf("%d of %d timer-ended sleeps name the spinner that shared the CPU as their waker", byTheSpinner, sleeps)
	}
}
