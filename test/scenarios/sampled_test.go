package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/test/harness"
)

// The sampled capture (issue 51): whyslow run as a user without any
// capability, where eBPF cannot load, on real workloads. The test is root
// only to drop to nobody, and to make what the workloads need (a cgroup, a
// slow disk, dropped caches), undone in t.Cleanup.

// sampledRun is what `whyslow run --json` wrote from samples.
type sampledRun struct {
	Schema, Capture string
	Verdict         struct {
		Reason  string
		Share   float64
		Error   float64
		Summary string
	}
	Samples int
	Shares  []struct {
		Reason string
		Share  float64
		Error  float64
	}
	Objects []struct {
		Object, Kind, Reason string
	}
	NotKnown []string `json:"not_known"`
}

// unprivileged is argv run as nobody with no capability; prefix runs
// before it (a shell that joins a cgroup).
func unprivileged(argv ...string) []string {
	return append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all"}, argv...)
}

// runSampled runs argv under whyslow run as nobody and returns its JSON
// and stderr. wrap, when given, runs the whole command line (a shell that
// joins a cgroup first).
func runSampled(t *testing.T, wrap func([]string) []string, argv ...string) (*sampledRun, string) {
	t.Helper()
	requireRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Fatal("setpriv (util-linux) is needed")
	}
	dir, err := os.MkdirTemp("", "whyslow-sampled-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777) // nobody writes the JSON there (t.TempDir's parent is root's only)
	js := filepath.Join(dir, "run.json")
	line := unprivileged(append([]string{filepath.Join(bin, "whyslow"), "run", "--json", js, "--"}, argv...)...)
	if wrap != nil {
		line = wrap(line)
	}
	cmd := exec.Command(line[0], line[1:]...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", line, err, errb.String())
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var r sampledRun
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if r.Capture != "sampled" || r.Schema != "whyslow.run/v1" {
		t.Fatalf("capture %q schema %q, want sampled whyslow.run/v1\n%s", r.Capture, r.Schema, errb.String())
	}
	sum := 0.0
	for _, s := range r.Shares {
		sum += s.Share
	}
	if math.Abs(sum-1) > 0.01 {
		t.Errorf("the shares add up to %.3f of the wall time, want 1\n%s", sum, errb.String())
	}
	if r.Samples < 10 {
		t.Errorf("%d samples\n%s", r.Samples, errb.String())
	}
	return &r, errb.String()
}

// nobodysPython is a python3 that a user without a home can run: the
// system's, when harness.Python's is under root's home (pyenv).
func nobodysPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", harness.Python(t)} {
		if exec.Command(unprivileged(p, "-c", "pass")[0], unprivileged(p, "-c", "pass")[1:]...).Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 that nobody can run")
	return ""
}

// wantVerdict checks the dominant reason.
func wantVerdict(t *testing.T, r *sampledRun, log, reason string) {
	t.Helper()
	if r.Verdict.Reason != reason || r.Verdict.Share < 0.5 {
		t.Errorf("verdict %s %.2f ± %.2f (%s), want %s\n%s", r.Verdict.Reason, r.Verdict.Share, r.Verdict.Error, r.Verdict.Summary, reason, log)
	}
}

func TestSampledCPULoop(t *testing.T) {
	r, log := runSampled(t, nil, nobodysPython(t), "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.2: pass")
	wantVerdict(t, r, log, "cpu")
	// Said once, in one line: the capture, and the stack it cannot read.
	if n := strings.Count(log, "whyslow: sampling /proc at 20 Hz"); n != 1 {
		t.Errorf("the capture said %d times, want once\n%s", n, log)
	}
	if !strings.Contains(r.Verdict.Summary, "samples at 20 Hz") || len(r.NotKnown) == 0 {
		t.Errorf("the verdict does not say it was sampled, or what sampling cannot know: %+v", r)
	}
}

// Unprivileged, /proc/PID/task/TID/stack cannot be read: said in one line,
// and the waits are told by syscall, file and wait channel.
func TestSampledUnreadableStack(t *testing.T) {
	r, log := runSampled(t, nil, "sleep", "1")
	wantVerdict(t, r, log, "sleep")
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "/stack") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "permission denied") {
		t.Errorf("want one line about the unreadable stack, got %q\n%s", lines, log)
	}
}

// A CPU loop in a cgroup v1 whose quota is a fifth of a CPU.
func TestSampledCPUQuota(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join("/sys/fs/cgroup/cpu", fmt.Sprintf("whyslow-sampled-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Its tasks are gone with the run; move any straggler out first.
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				os.WriteFile("/sys/fs/cgroup/cpu/cgroup.procs", []byte(pid), 0o644)
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	for f, v := range map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "20000"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	join := func(line []string) []string {
		return append([]string{"sh", "-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, dir}, line...)
	}
	r, log := runSampled(t, join, nobodysPython(t), "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.5: pass")
	wantVerdict(t, r, log, "cpu-quota")
}

// A cold buffered read of a file on a disk throttled to 4 MiB/s, by a
// user who may read it.
func TestSampledColdRead(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{ReadBPS: 4 << 20})
	data := filepath.Join(d.Dir, "data.bin")
	if out, err := exec.Command("dd", "if=/dev/urandom", "of="+data, "bs=1M", "count=6", "conv=fsync").CombinedOutput(); err != nil {
		t.Fatalf("writing test data: %v\n%s", err, out)
	}
	os.Chmod(d.Dir, 0o755)
	os.Chmod(data, 0o644)
	dropCaches(t)
	r, log := runSampled(t, nil, "dd", "if="+data, "of=/dev/null", "bs=1M")
	wantVerdict(t, r, log, "disk-read")
	if len(r.Objects) == 0 || !strings.HasSuffix(r.Objects[0].Object, "/data.bin") {
		t.Errorf("the waits are not on data.bin: %+v\n%s", r.Objects, log)
	}
}

// Writes each followed by fsync, on a disk throttled to 2 MiB/s.
func TestSampledFsyncLoop(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 2 << 20})
	dir := filepath.Join(d.Dir, "w")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d.Dir, 0o755)
	os.Chmod(dir, 0o777)
	prog := "import os, time\nf = os.open('" + dir + "/log', os.O_WRONLY | os.O_CREAT, 0o600)\nt = time.time()\n" +
		"while time.time() - t < 1.5:\n os.write(f, b'x' * 65536); os.fsync(f)"
	r, log := runSampled(t, nil, nobodysPython(t), "-c", prog)
	wantVerdict(t, r, log, "sync")
}

// A client waiting on a TCP server that answers after 1.5 s (Nancy Drew's
// first case: wchan sk_wait_data).
func TestSampledNetworkWait(t *testing.T) {
	requireRoot(t)
	port := slowAnswers(t, 1500*time.Millisecond)
	prog := fmt.Sprintf("import socket\ns = socket.create_connection(('127.0.0.1', %d))\ns.sendall(b'question\\n')\ns.recv(64)",
		port)
	r, log := runSampled(t, nil, nobodysPython(t), "-c", prog)
	wantVerdict(t, r, log, "network")
	if len(r.Objects) == 0 || !strings.Contains(r.Objects[0].Object, "127.0.0.1:") {
		t.Errorf("the waits are not on the server's address: %+v\n%s", r.Objects, log)
	}
}

// Waits ended by their own timeout are sleep, as traced waits the timer
// ended are (issue 51: 0 of 42 in ACCURACY.md before): the timeout is read
// from the call's arguments (a poll's milliseconds; a select's or a futex's
// timespec from the target's memory), and a wait seen to end no earlier
// than it timed out. One that something ended sooner is its file's.
func TestSampledTimedOutWaits(t *testing.T) {
	requireRoot(t)
	port := slowAnswers(t, 1200*time.Millisecond)
	for _, tc := range []struct {
		name, prog, want string
	}{
		{"select on a pipe nobody writes", "import os, select\nr, w = os.pipe()\nselect.select([r], [], [], 1.3)", "sleep"},
		{"poll of a UDP socket nobody sends to, in a child", "import os, select, socket\npid = os.fork()\nif pid == 0:\n" +
			"    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    s.bind(('127.0.0.1', 0))\n" +
			"    p = select.poll()\n    p.register(s, select.POLLIN)\n    p.poll(1300)\n    os._exit(0)\nos.waitpid(pid, 0)", "sleep"},
		{"Event.wait with a timeout, in a thread joined", "import threading\n" +
			"t = threading.Thread(target=lambda: threading.Event().wait(1.3))\nt.start()\nt.join()", "sleep"},
		// A receive with a timeout of 5 s that the server answers after
		// 1.2: the network's, not a sleep.
		{"a receive answered before its timeout", fmt.Sprintf("import socket\ns = socket.create_connection(('127.0.0.1', %d))\n"+
			"s.settimeout(5)\ns.sendall(b'question\\n')\ns.recv(64)", port), "network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, log := runSampled(t, nil, nobodysPython(t), "-c", tc.prog)
			wantVerdict(t, r, log, tc.want)
		})
	}
}

// A thread that moves itself alone (its tid to a cgroup v1's tasks) into
// a cgroup whose quota is a fifth of a CPU, as the accuracy generator's
// cpu-quota blocks do: its own cgroup's quota, not its process's (4 of 13
// in ACCURACY.md before).
func TestSampledCPUQuotaOfAThread(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join("/sys/fs/cgroup/cpu", fmt.Sprintf("whyslow-sampled-thread-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "tasks")); err == nil {
			for _, tid := range strings.Fields(string(b)) {
				os.WriteFile("/sys/fs/cgroup/cpu/tasks", []byte(tid), 0o644)
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	for f, v := range map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "20000"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "tasks"), 0o666) // nobody's thread moves itself in
	prog := fmt.Sprintf("import threading, time\ndef work():\n    with open(%q, 'w') as f:\n        f.write(str(threading.get_native_id()))\n"+
		"    t = time.time()\n    while time.time() - t < 1.5: pass\nth = threading.Thread(target=work)\nth.start()\nth.join()", filepath.Join(dir, "tasks"))
	r, log := runSampled(t, nil, nobodysPython(t), "-c", prog)
	wantVerdict(t, r, log, "cpu-quota")
}

// A child process that moves itself into a memory cgroup v1 limited to
// 8 MiB and writes 16 MiB to a disk throttled to 4 MiB/s in writes: to
// cache more it must reclaim, and reclaim waits for writeback. Its wait
// channel is a page's wait; its cgroup's failcnt grows (0 of 13 in
// ACCURACY.md before: disk-read).
func TestSampledMemoryLimit(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 4 << 20})
	dir := filepath.Join(d.Dir, "w")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(d.Dir, 0o755)
	os.Chmod(dir, 0o777)
	cg := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("whyslow-sampled-mem-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs")); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				os.WriteFile("/sys/fs/cgroup/memory/cgroup.procs", []byte(pid), 0o644)
			}
		}
		if err := os.Remove(cg); err != nil {
			t.Errorf("removing %s: %v", cg, err)
		}
	})
	if err := os.WriteFile(filepath.Join(cg, "memory.limit_in_bytes"), []byte(fmt.Sprint(8<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(cg, "cgroup.procs"), 0o666)
	prog := fmt.Sprintf("import os\npid = os.fork()\nif pid == 0:\n    with open(%q, 'w') as f:\n        f.write(str(os.getpid()))\n"+
		"    fd = os.open(%q, os.O_WRONLY | os.O_CREAT, 0o600)\n    for _ in range(256):\n        os.write(fd, b'x' * 65536)\n"+
		"    os._exit(0)\nos.waitpid(pid, 0)", filepath.Join(cg, "cgroup.procs"), filepath.Join(dir, "data"))
	r, log := runSampled(t, nil, nobodysPython(t), "-c", prog)
	wantVerdict(t, r, log, "memory")
}

// slowAnswers is the port of a TCP server on 127.0.0.1 that answers each
// connection's first read after delay.
func slowAnswers(t *testing.T, delay time.Duration) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				c.Read(buf)
				time.Sleep(delay)
				c.Write([]byte("answer\n"))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
