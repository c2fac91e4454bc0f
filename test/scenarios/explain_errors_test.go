package scenarios

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/test/harness"
)

// Explanation errors found against peers and real programs (issue 10). Each
// workload is first shown to be slow for its reason without whyslow; then
// whyslow must say that reason, and blame no one for it falsely.

func newSlowDisk(t *testing.T, o slowdisk.Options) *slowdisk.Disk {
	t.Helper()
	requireRoot(t)
	harness.Unchanged(t)
	d, err := slowdisk.Create(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("removing the slow disk: %v", err)
		}
	})
	return d
}

// runExplained runs a command under `whyslow run` and returns its explanation.
func runExplained(t *testing.T, args ...string) (*explanation, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "run.json")
	cmd := exec.Command(filepath.Join(bin, "whyslow"), append([]string{"run", "--linger", "0", "--json", js, "--"}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("whyslow run %v: %v\n%s", args, err, errb.String())
	}
	return readExplanation(t, js, errb.String()), errb.String()
}

// attachExplained attaches to pid for d and returns the explanation.
func attachExplained(t *testing.T, pid int, d time.Duration) (*explanation, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "attach.json")
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "attach", "-p", strconv.Itoa(pid), "-d", d.String(), "--json", js)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("whyslow attach: %v\n%s", err, errb.String())
	}
	return readExplanation(t, js, errb.String()), errb.String()
}

// timed runs a command untraced and returns how long it took.
func timed(t *testing.T, args ...string) time.Duration {
	t.Helper()
	start := time.Now()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return time.Since(start)
}

func dropCaches(t *testing.T) {
	t.Helper()
	exec.Command("sync").Run()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReads: reads of a disk throttled to 4 MiB/s: O_DIRECT reads are
// disk-read (not disk-write), a cold buffered read is the target's own and
// blames no one, and attach sees a read already in progress.
func TestReads(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{ReadBPS: 4 << 20})
	data := filepath.Join(d.Dir, "data.bin")
	if out, err := exec.Command("dd", "if=/dev/urandom", "of="+data, "bs=1M", "count=8", "conv=fsync").CombinedOutput(); err != nil {
		t.Fatalf("writing test data: %v\n%s", err, out)
	}

	t.Run("O_DIRECT read is disk-read", func(t *testing.T) {
		args := []string{"dd", "if=" + data, "of=/dev/null", "bs=1M", "iflag=direct"}
		if took := timed(t, args...); took < 1500*time.Millisecond {
			t.Fatalf("8 MiB of direct reads at 4 MiB/s took %v: the disk is not slow", took)
		}
		x, log := runExplained(t, args...)
		if x.Verdict.Reason != "disk-read" || x.Verdict.Share < 0.7 {
			t.Errorf("verdict %s %.2f (%s), want disk-read\n%s", x.Verdict.Reason, x.Verdict.Share, x.Verdict.Summary, log)
		}
		if w, r := x.Time.OffCPUS["disk-write"], x.Time.OffCPUS["disk-read"]; w > r/10 {
			t.Errorf("disk-write %.2fs against disk-read %.2fs: direct reads counted as writes", w, r)
		}
	})

	t.Run("own cold read blames no one", func(t *testing.T) {
		args := []string{"dd", "if=" + data, "of=/dev/null", "bs=1M"}
		dropCaches(t)
		if took := timed(t, args...); took < 1500*time.Millisecond {
			t.Fatalf("8 MiB of cold reads at 4 MiB/s took %v: the disk is not slow", took)
		}
		dropCaches(t)
		x, log := runExplained(t, args...)
		if x.Verdict.Reason != "disk-read" {
			t.Errorf("verdict %s (%s), want disk-read\n%s", x.Verdict.Reason, x.Verdict.Summary, log)
		}
		for _, b := range x.Blame {
			if b.Activity == "writeback" || strings.Contains(b.Summary, "data.bin") || strings.Contains(b.Summary, ".img") {
				t.Errorf("the target's own reads blamed on someone: %s\n%s", b.Summary, log)
			}
		}
		// Throttled reads are sent on by a kworker, which the kernel sees
		// issue them: they are still the target's, by file and time.
		var read uint64
		for _, f := range x.Files {
			if strings.HasSuffix(f.Path, "/data.bin") {
				read = f.ReadBytes
			}
		}
		if read < 7<<20 {
			t.Errorf("data.bin: %d bytes read from disk, want most of its 8 MiB\n%s", read, log)
		}
	})

	t.Run("a cold tree walk reads the filesystem's metadata", func(t *testing.T) {
		tree := filepath.Join(d.Dir, "tree")
		mk := "import os, sys\nfor i in range(2000):\n    d = sys.argv[1] + '/d%d' % i; os.makedirs(d)\n    for j in range(10): open(d + '/f%d' % j, 'w').close()"
		if out, err := exec.Command(harness.Python(t), "-c", mk, tree).CombinedOutput(); err != nil {
			t.Fatalf("making the tree: %v\n%s", err, out)
		}
		// Inodes just written stay dirty a moment after sync: the first
		// drop leaves them cached.
		dropCaches(t)
		time.Sleep(time.Second)
		dropCaches(t)
		x, log := runExplained(t, "du", "-s", tree) // a stat of every file: their inodes
		if x.Verdict.Reason != "disk-read" {
			t.Fatalf("verdict %s (%s), want disk-read\n%s", x.Verdict.Reason, x.Verdict.Summary, log)
		}
		if !strings.Contains(x.Verdict.Summary, "filesystem's metadata") || !strings.Contains(x.Verdict.Summary, "stat") {
			t.Errorf("verdict %q: want the inodes' reads (a stat call) named, not a file's data\n%s", x.Verdict.Summary, log)
		}
	})

	t.Run("attach sees a read already in progress", func(t *testing.T) {
		dropCaches(t)
		// One read(2) of 8 MiB takes about 2 s at 4 MiB/s; attach starts inside it.
		dd := exec.Command("dd", "if="+data, "of=/dev/null", "bs=8M", "count=1", "iflag=direct")
		if err := dd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { dd.Process.Kill(); dd.Wait() }()
		time.Sleep(200 * time.Millisecond)
		x, log := attachExplained(t, dd.Process.Pid, 800*time.Millisecond)
		if !inState(dd.Process.Pid, "DSR") {
			t.Fatalf("dd's read ended before attach did: the wait did not span the window\n%s", log)
		}
		if x.Verdict.Reason != "disk-read" || x.Verdict.Share < 0.8 {
			t.Errorf("verdict %s %.2f (%s), want disk-read\n%s", x.Verdict.Reason, x.Verdict.Share, x.Verdict.Summary, log)
		}
		if !strings.HasPrefix(x.Target.Command, "dd ") {
			t.Errorf("command %q, want dd's command line", x.Target.Command)
		}
		var named bool
		for _, f := range x.Files {
			named = named || (f.Path == data && f.WaitS > 0.5)
		}
		if !named {
			t.Errorf("the file being read is not named with its wait: %+v\n%s", x.Files, log)
		}
	})
}

// inState reports whether pid's state is one of states (from /proc/PID/stat).
func inState(pid int, states string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && strings.IndexByte(states, s[i+2]) >= 0
}

// TestAttachFollowsExistingChildren: a shell whose child, started before
// attach, does the work. The child is followed, and the shell's wait for it
// is no verdict of its own.
func TestAttachFollowsExistingChildren(t *testing.T) {
	requireRoot(t)
	py := harness.Python(t)
	sh := exec.Command("sh", "-c", `"$0" -c 'import time
t = time.time()
while time.time() - t < 4: pass'; echo done`, py)
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sh.Process.Kill(); sh.Wait() }()
	time.Sleep(500 * time.Millisecond)
	x, log := attachExplained(t, sh.Process.Pid, 1500*time.Millisecond)
	if len(x.Target.PIDs) < 2 {
		t.Errorf("pids followed %v: the existing child is missing\n%s", x.Target.PIDs, log)
	}
	if x.Verdict.Reason != "cpu" || x.Verdict.Share < 0.8 {
		t.Errorf("verdict %s %.2f (%s), want cpu (the child's)\n%s", x.Verdict.Reason, x.Verdict.Share, x.Verdict.Summary, log)
	}
}

// TestRenamedThreadIsNamed: a thread that renames itself (prctl PR_SET_NAME)
// and then does the work is named by its new name.
func TestRenamedThreadIsNamed(t *testing.T) {
	requireRoot(t)
	prog := `import ctypes, threading, time
def work():
    ctypes.CDLL(None).prctl(15, b"cruncher", 0, 0, 0)
    t = time.time()
    while time.time() - t < 1.5: pass
th = threading.Thread(target=work); th.start(); th.join()`
	x, log := runExplained(t, harness.Python(t), "-c", prog)
	if x.Verdict.Reason != "cpu" || !strings.Contains(x.Verdict.Summary, "cruncher") {
		t.Errorf("verdict %s (%s), want cpu naming the thread cruncher\n%s", x.Verdict.Reason, x.Verdict.Summary, log)
	}
}

// TestWriteSummaryAndDevices: a thread writes 4 MiB to one file and 4 MiB to
// a journal it fsyncs, on a disk throttled to 4 MiB/s for writes. The verdict
// pairs the journal with the bytes it got, and the device table shows the
// throttle that await cannot see; a trim shows up as discards.
func TestWriteSummaryAndDevices(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 4 << 20})
	data, journal := filepath.Join(d.Dir, "data.bin"), filepath.Join(d.Dir, "wal.log")
	prog := `import os, sys
with open(sys.argv[1], "wb") as f:
    f.write(os.urandom(4 << 20))
with open(sys.argv[2], "wb") as f:
    f.write(os.urandom(4 << 20))
    f.flush()
    os.fsync(f.fileno())`
	if took := timed(t, harness.Python(t), "-c", prog, data+".probe", journal+".probe"); took < 800*time.Millisecond {
		t.Fatalf("fsync of 4 MiB at 4 MiB/s took %v: the disk is not slow", took)
	}
	x, log := runExplained(t, harness.Python(t), "-c", prog, data, journal)
	if x.Verdict.Reason != "sync" {
		t.Fatalf("verdict %s (%s), want sync\n%s", x.Verdict.Reason, x.Verdict.Summary, log)
	}
	if !strings.Contains(x.Verdict.Summary, "wrote 4.0 MiB to "+journal) {
		t.Errorf("summary %q: want the journal's own 4.0 MiB paired with it", x.Verdict.Summary)
	}
	var loop bool
	for _, dev := range x.Devices {
		if "/dev/"+dev.Name != d.Device {
			continue
		}
		loop = true
		if dev.ThrottleWriteBPS != 4<<20 {
			t.Errorf("%s: throttle %d, want %d", dev.Name, dev.ThrottleWriteBPS, 4<<20)
		}
		if sync := x.Time.OffCPUS["sync"]; dev.ThrottledS < sync/2 || dev.AwaitMS*float64(dev.Requests)/1e3 > sync/2 {
			t.Errorf("%s: throttled %.2fs, await %.1f ms × %d, against %.2fs in fsync: the throttle's part is not shown",
				dev.Name, dev.ThrottledS, dev.AwaitMS, dev.Requests, sync)
		}
	}
	if !loop {
		t.Errorf("no row for %s in devices: %+v", d.Device, x.Devices)
	}
	if !strings.Contains(strings.Join(strings.Fields(log), " "), "blkio throttle 4.0 MiB/s write; it held the target's I/O") {
		t.Errorf("the text does not show the throttle:\n%s", log)
	}

	os.Remove(data)
	trim, log := runExplained(t, "fstrim", d.Dir)
	var discarded uint64
	for _, dev := range trim.Devices {
		discarded += dev.DiscardBytes
	}
	if discarded == 0 {
		t.Errorf("fstrim discarded nothing that whyslow saw: %+v\n%s", trim.Devices, log)
	}
}

// TestUnixSocketClientWaitsForItsServer: a client of a local server over a
// Unix socket, as pgbench of a local PostgreSQL: it sends a request, polls,
// then reads the reply, and none of those calls waits but the poll. Its
// polls are waits for the server (ipc, held up by it), not waits for work:
// the default level sees its sends and receives only through the CPU
// sampler, and Unix sockets did not count as moving data at all.
func TestUnixSocketClientWaitsForItsServer(t *testing.T) {
	requireRoot(t)
	py := harness.Python(t)
	sock := filepath.Join(t.TempDir(), "server.sock")
	server := exec.Command(py, "-c", `import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
while True:
    req = c.recv(4096)
    if not req:
        break
    if b"w" in req:
        time.sleep(0.03)  # the server's work: 30 ms for a "w" request
    c.sendall(b"y" * len(req))
`, sock)
	ready, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	if _, err := ready.Read(make([]byte, 6)); err != nil {
		t.Fatalf("the server did not start: %v", err)
	}
	// 20 slow requests (30 ms of the server's each), between bursts of 300
	// quick ones, so that the CPU sampler finds the client in its sends and
	// receives, as it finds pgbench.
	client := []string{py, "-c", `import select, socket, sys
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect(sys.argv[1]); c.setblocking(False)
p = select.poll(); p.register(c, select.POLLIN)
def ask(req):
    c.send(req)
    while True:
        try:
            return c.recv(4096)
        except BlockingIOError:
            p.poll()
for i in range(20):
    for _ in range(300):
        ask(b"x")
    ask(b"w")
`, sock}
	x, log := runExplained(t, client...)
	if x.Verdict.Reason != "ipc" || x.Verdict.Share < 0.5 {
		t.Errorf("verdict %s %.2f (%s), want ipc: the client waited for its server\n%s", x.Verdict.Reason, x.Verdict.Share, x.Verdict.Summary, log)
	}
	var blamed bool
	for _, b := range x.Blame {
		blamed = blamed || b.PID == uint32(server.Process.Pid)
	}
	if !blamed {
		t.Errorf("the server (pid %d) is not named: %+v\n%s", server.Process.Pid, x.Blame, log)
	}
}
