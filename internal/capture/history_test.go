package capture

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/test/harness"
)

// holdThenSleep takes a flock, says so, waits for a line on stdin, then
// sleeps 0.4 s before it lets go, and prints when (CLOCK_MONOTONIC, as the
// kernel's bpf_ktime_get_ns) its sleep began and ended.
const holdThenSleep = `
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
t1 = time.monotonic_ns()
time.sleep(0.4)
t2 = time.monotonic_ns()
print(t1, t2, flush=True)
fcntl.flock(fd, fcntl.LOCK_UN)
`

// A process outside the target is not stamped at its switches: when it
// becomes a peer (a lock holder that lets go), the waits that led there are
// dated by the kernel's own stamps, read at their wakeups. The holder's
// sleep, begun after capture, must be sent with the times it printed: its
// start within a few ms (the run queue's clock may lag), its end too, and
// its call. A wait of a process that never met the target is never sent.
func TestOutsideHistoryDatedByTheKernel(t *testing.T) {
	py := harness.Python(t)
	lock := filepath.Join(t.TempDir(), "lock")
	holder := exec.Command(py, "-c", holdThenSleep, lock)
	in, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Process.Kill()
	out := bufio.NewScanner(outPipe)
	if !out.Scan() || out.Text() != "locked" {
		t.Fatalf("holder: %q", out.Text())
	}
	// A bystander that never meets the target: its sleeps must not be sent.
	// It outlives the capture: its exit would wake the test, a peer.
	// Started before the capture, and running once it says so: a page the
	// target reads as it starts may be one the bystander is reading, and
	// the target's read would end the bystander's wait (it would be a peer).
	bystander := exec.Command(harness.Python(t), "-c", "import time\nprint('ready', flush=True)\nfor i in range(250): time.sleep(0.02)")
	byOut, err := bystander.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer bystander.Wait()
	defer bystander.Process.Kill()
	if by := bufio.NewScanner(byOut); !by.Scan() || by.Text() != "ready" {
		t.Fatalf("bystander: %q", by.Text())
	}
	go func() {
		time.Sleep(300 * time.Millisecond) // after the capture began
		fmt.Fprintln(in, "go")
	}()
	c := runCaptured(t, Options{}, py, "-c", "import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDWR)\nfcntl.flock(fd, fcntl.LOCK_EX)", lock)
	var t1, t2 uint64
	if !out.Scan() {
		t.Fatal("the holder printed no times")
	}
	if _, err := fmt.Sscan(out.Text(), &t1, &t2); err != nil {
		t.Fatalf("holder: %q: %v", out.Text(), err)
	}
	if err := holder.Wait(); err != nil {
		t.Fatal(err)
	}
	const slack = 6 * time.Millisecond // a tick (4 ms at HZ 250) and the interpreter
	var found []string
	ok := false
	for _, o := range eventsOf[*event.OffCPU](c) {
		if o.PID == uint32(bystander.Process.Pid) {
			t.Errorf("a bystander's wait was sent: %+v", o)
		}
		if o.PID != uint32(holder.Process.Pid) || !o.Outside {
			continue
		}
		start, end := o.Time-o.Off, o.Time
		found = append(found, fmt.Sprintf("%c syscall %d, %v from the sleep's start to %v after its end", o.State, o.Syscall,
			time.Duration(int64(start)-int64(t1)), time.Duration(int64(end)-int64(t2))))
		if o.Off > uint64(300*time.Millisecond) && near(start, t1, slack) && near(end, t2, slack) && o.Syscall == 230 /* clock_nanosleep */ {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no wait of the holder's (pid %d) as long as its sleep, from %d to %d; its waits sent:\n%s",
			holder.Process.Pid, t1, t2, strings.Join(found, "\n"))
	}
}

// near reports whether a and b are within d of each other.
func near(a, b uint64, d time.Duration) bool {
	if a > b {
		return a-b <= uint64(d)
	}
	return b-a <= uint64(d)
}
