// Package record tests `whyslow record` and the analyses of a recording, end
// to end on the real kernel.
package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

var bin string

func TestMain(m *testing.M) { harness.Main(m, &bin) }

func whyslow(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "whyslow"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errb.String(), "goroutine ") || strings.Contains(errb.String(), "panic:") {
		t.Fatalf("whyslow %v panicked:\n%s", args, errb.String())
	}
	return out.String(), errb.String(), code
}

// report runs an analysis with --json and decodes its result.
func report(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errs, code := whyslow(t, append(append([]string{"report"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("report %v: exit %d: %s", args, code, errs)
	}
	var wrap struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &wrap); err != nil {
		t.Fatalf("report %v: %v\n%s", args, err, out)
	}
	if err := json.Unmarshal(wrap.Result, v); err != nil {
		t.Fatalf("report %v: %v", args, err)
	}
}

type usage struct {
	Processes []struct {
		PID       uint32 `json:"pid"`
		Comm      string `json:"comm"`
		WriteFile uint64 `json:"write_file"`
	} `json:"processes"`
	Files []struct {
		Path  string   `json:"path"`
		Write uint64   `json:"write"`
		Read  uint64   `json:"read"`
		Users []string `json:"users"`
	} `json:"files"`
}

// A process that writes a known number of bytes to a known file shows exactly
// those bytes under the right process and file, at both levels that hook
// syscalls (the default level sees no call that does not wait).
func TestUsageExactBytes(t *testing.T) {
	harness.RequireRoot(t)
	for _, level := range []string{"--full", "--syscalls"} {
		t.Run(level, func(t *testing.T) {
			dir := t.TempDir()
			file, rec := filepath.Join(dir, "known.out"), filepath.Join(dir, "rec.db")
			script := `import sys
with open(sys.argv[1], "wb") as f:
    for n in (100000, 20000, 3456):
        f.write(b"k" * n)
`
			if _, errs, code := whyslow(t, "record", "-o", rec, level, "--", harness.Python(t), "-c", script, file); code != 0 {
				t.Fatalf("record: exit %d: %s", code, errs)
			}
			var u usage
			report(t, &u, "usage", rec, "--file", file)
			if len(u.Files) != 1 || u.Files[0].Path != file || u.Files[0].Write != 123456 || u.Files[0].Read != 0 {
				t.Fatalf("usage of %s: %+v, want exactly 123456 bytes written", file, u.Files)
			}
			if len(u.Files[0].Users) == 0 || !strings.Contains(u.Files[0].Users[0], "python3") {
				t.Errorf("users of the file: %v", u.Files[0].Users)
			}
			if level == "--full" && !strings.HasPrefix(u.Files[0].Users[0], "fd ") {
				t.Errorf("a full recording names the fd: %v", u.Files[0].Users)
			}
			if len(u.Processes) != 1 || u.Processes[0].WriteFile != 123456 || u.Processes[0].Comm != "python3" {
				t.Errorf("per-process: %+v", u.Processes)
			}
		})
	}
}

// At the default level, which hooks no syscall, usage still shows each
// process's bytes and calls (the kernel's own accounting, exact) and the
// file written (its pages dirtied): the writer's /proc/self/io, read by it
// just before it exits, is the reference (issue 26).
func TestUsageDefaultLevel(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	file, rec := filepath.Join(dir, "out.dat"), filepath.Join(dir, "rec.db")
	script := `import sys, time
with open(sys.argv[1], "wb") as f:
    for i in range(100):
        f.write(b"x" * 65536); f.flush(); time.sleep(0.01)
sys.stdout.write(open("/proc/self/io").read())
`
	out, errs, code := whyslow(t, "record", "-o", rec, "--", harness.Python(t), "-c", script, file)
	if code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	io := map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			io[k], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	var u struct {
		Calls      bool `json:"calls"`
		Accounting []struct {
			PID        uint32  `json:"pid"`
			Comm       string  `json:"comm"`
			ReadBytes  float64 `json:"read_bytes"`
			WriteBytes float64 `json:"write_bytes"`
			ReadCalls  float64 `json:"read_calls"`
			WriteCalls float64 `json:"write_calls"`
		} `json:"accounting"`
		Files []struct {
			Path    string `json:"path"`
			Dirtied uint64 `json:"dirtied"`
		} `json:"files"`
	}
	report(t, &u, "usage", rec)
	if u.Calls || len(u.Accounting) == 0 || u.Accounting[0].Comm != "python3" {
		t.Fatalf("usage at the default level: %+v", u)
	}
	p := u.Accounting[0]
	// Reading /proc/self/io is itself a read or two, after the numbers it
	// shows were taken (and its bytes): that much more, and no less.
	near := func(what string, got, want float64) {
		if want <= 0 || got < want || got > max(want*1.01, want+4) && got > want+4096 {
			t.Errorf("python3's %s: %.0f, /proc/self/io at its end said %.0f: want within 1%% (and no less)", what, got, want)
		}
	}
	near("bytes written", p.WriteBytes, io["wchar"])
	near("bytes read", p.ReadBytes, io["rchar"])
	near("write calls", p.WriteCalls, io["syscw"])
	near("read calls", p.ReadCalls, io["syscr"])
	if len(u.Files) == 0 || u.Files[0].Path != file || u.Files[0].Dirtied < 6<<20 {
		t.Errorf("files at the default level: %+v, want %s first with its 6.25 MiB dirtied", u.Files, file)
	}
	text, _, _ := whyslow(t, "report", "usage", rec)
	if !strings.Contains(text, "default-level recording") || !strings.Contains(text, "/out.dat") {
		t.Errorf("usage's text does not say what the default level cannot show, or misses the file:\n%s", text)
	}
}

type op struct {
	Syscall string `json:"syscall"`
	Path    string `json:"path"`
	DurNS   uint64 `json:"duration_ns"`
	Begin   uint64 `json:"begin_ns"`
	Outside bool   `json:"outside_range"`
}

// A slow fsync on the slow disk comes first in top's sync class, with its file.
func TestTopSlowFsync(t *testing.T) {
	harness.RequireRoot(t)
	harness.Unchanged(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.db")
	script := `import os, sys
p = os.path.join(os.environ["SLOWDISK_DIR"], "synced.dat")
with open(p, "wb") as f:
    f.write(b"s" * (4 << 20))
    f.flush()
    os.fsync(f.fileno())
with open(os.path.join(os.environ["SLOWDISK_DIR"], "small.dat"), "wb") as f:
    f.write(b"x")
    os.fsync(f.fileno())
print(p)
`
	cmd := exec.Command(filepath.Join(bin, "slowdisk"), "--write-bps", "4M", "--",
		filepath.Join(bin, "whyslow"), "record", "-o", rec, "--", harness.Python(t), "-c", script)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("recording the fsync: %v", err)
	}
	synced := strings.TrimSpace(string(out))
	var top map[string][]op
	report(t, &top, "top", rec)
	syncs := top["sync"]
	if len(syncs) < 2 || syncs[0].Syscall != "fsync" || syncs[0].Path != synced {
		t.Fatalf("top sync: %+v, want the fsync of %s first", syncs, synced)
	}
	if syncs[0].DurNS < 500e6 {
		t.Errorf("4 MiB through a 4 MiB/s disk synced in %v", time.Duration(syncs[0].DurNS))
	}
}

// Time-range filters include and exclude known operations.
func TestTimeRangeFilters(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.db")
	script := `import os, sys, time, datetime
d = sys.argv[1]
open(os.path.join(d, "early"), "w").write("a")
time.sleep(0.6)
mid = datetime.datetime.now(datetime.timezone.utc)
time.sleep(0.6)
open(os.path.join(d, "late"), "w").write("b")
print(mid.strftime("%H:%M:%S.%f"))
`
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "record", "-o", rec, "--full", "--", harness.Python(t), "-c", script, dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	mid := strings.TrimSpace(string(out))
	paths := func(args ...string) map[string]bool {
		var ops []op
		report(t, &ops, append([]string{"log", rec, "--file", dir + "/*"}, args...)...)
		got := map[string]bool{}
		for _, o := range ops {
			got[filepath.Base(o.Path)] = true
		}
		return got
	}
	if p := paths(); !p["early"] || !p["late"] {
		t.Fatalf("unfiltered log misses a file: %v", p)
	}
	if p := paths("--begin", mid, "--utc"); p["early"] || !p["late"] {
		t.Errorf("--begin %s: %v, want late only", mid, p)
	}
	if p := paths("--end", mid, "--gmt"); !p["early"] || p["late"] {
		t.Errorf("--end %s: %v, want early only", mid, p)
	}
	if p := paths("--timerange", "[+0s,+0.3s]"); !p["early"] || p["late"] {
		t.Errorf("--timerange [+0s,+0.3s]: %v, want early only", p)
	}
	if _, errs, code := whyslow(t, "report", "log", rec, "--begin", "25:99"); code != 2 || strings.Count(errs, "\n") != 1 {
		t.Errorf("bad --begin: exit %d, %q; want 2 and one line", code, errs)
	}
}

// A recording killed with SIGKILL is readable up to its last flush.
func TestRecordingSurvivesSIGKILL(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.db")
	script := `import os, sys, time
end = time.time() + 8
with open(sys.argv[1], "wb") as f:
    while time.time() < end:
        f.write(b"z" * 4096); f.flush(); os.fsync(f.fileno()); time.sleep(0.01)
`
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "record", "-o", rec, "--", harness.Python(t), "-c", script, filepath.Join(dir, "killed.dat"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3500 * time.Millisecond)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whyslow and the workload
	cmd.Wait()
	out, errs, code := whyslow(t, "sql", rec, "SELECT count(*) FROM syscalls WHERE name = 'fsync'", "--format", "csv")
	if code != 0 {
		t.Fatalf("sql on a killed recording: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var n int
	if len(lines) == 2 {
		n, _ = strconvAtoi(lines[1])
	}
	if n < 50 {
		t.Errorf("killed after 3.5 s of fsyncs every 10 ms, the recording kept %d: want what was flushed up to the last second", n)
	}
	if _, errs, code := whyslow(t, "report", "stats", rec); code != 0 {
		t.Errorf("stats on a killed recording: exit %d: %s", code, errs)
	}
	if text, errs, code := whyslow(t, "report", "usage", rec); code != 0 || !strings.Contains(text, "/killed.dat") {
		t.Errorf("usage of a killed recording does not name the file being written (exit %d, %s):\n%s", code, errs, text)
	}
	// Analyses never change a recording: sql is read-only.
	if _, errs, code := whyslow(t, "sql", rec, "DROP TABLE syscall_raw"); code != 2 || !strings.Contains(errs, "read-only") {
		t.Errorf("DROP through whyslow sql: exit %d, %q; want it refused", code, errs)
	}
	out2, _, _ := whyslow(t, "sql", rec, "SELECT count(*) FROM syscalls WHERE name = 'fsync'", "--format", "csv")
	if out2 != out {
		t.Errorf("the recording changed under analysis: %q then %q", out, out2)
	}
}

func strconvAtoi(s string) (int, error) {
	n := 0
	for _, c := range strings.TrimSpace(s) {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// Bad files: a one-line error, exit 3, never a panic.
func TestBadRecordings(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	if _, errs, code := whyslow(t, "record", "-o", good, "--", "true"); code != 0 {
		t.Fatalf("record: %s", errs)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"truncated.db": data[:len(data)/3],
		"foreign.db":   []byte("this is not a recording\n"),
		"empty.db":     nil,
		"random.db":    bytes.Repeat([]byte{0x44, 0x55, 0x43, 0x4b, 0xff}, 5000),
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.WriteFile(p, content, 0o644)
		for _, args := range [][]string{{"report", "usage", p}, {"report", "explain", p, "--pid", "1"}, {"sql", p, "SELECT 1"}} {
			_, errs, code := whyslow(t, args...)
			if code != 3 {
				t.Errorf("%v: exit %d, want 3 (%s)", args, code, errs)
			}
			if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "whyslow: ") {
				t.Errorf("%v: want one line, got %q", args, errs)
			}
		}
	}
	if _, errs, code := whyslow(t, "report", "usage", filepath.Join(dir, "missing.db")); code != 3 || strings.Count(errs, "\n") != 1 {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
	// A recording the user may not read: exit 3 too, not 4 (a missing
	// privilege to capture), from every command that opens one.
	open, err := os.MkdirTemp("", "whyslow-denied-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(open)
	os.Chmod(open, 0o755) // the user below reaches the file, and only the file is closed
	denied := filepath.Join(open, "denied.db")
	if err := os.WriteFile(denied, data, 0); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"report", "usage", denied}, {"sql", denied, "SELECT 1"},
		{"export", "parquet", denied, "-o", filepath.Join(open, "pq")}, {"report", "html", denied, "-o", filepath.Join(open, "r.html")}} {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
			filepath.Join(bin, "whyslow")}, args...)...)
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil {
			t.Fatalf("setpriv: %v", err)
		}
		code := cmd.ProcessState.ExitCode()
		if code != 3 || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), "permission denied") {
			t.Errorf("%v, unreadable: exit %d, %q; want exit 3 and one line saying permission denied", args, code, out)
		}
	}
	if _, _, code := whyslow(t, "record", "-o", good, "--", "true"); code != 1 && code != 2 {
		t.Errorf("recording over an existing file must refuse, got exit %d", code)
	} else if st, _ := os.Stat(good); st.Size() != int64(len(data)) {
		t.Error("an existing recording was overwritten")
	}
}

// A full disk stops the recording with a clear message and leaves a readable file.
func TestFullDiskStopsRecording(t *testing.T) {
	harness.RequireRoot(t)
	harness.Unchanged(t)
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Fatal("fio is needed")
	}
	tmp := t.TempDir()
	// whyslow's stderr goes elsewhere than the disk it fills, or the message
	// itself could be lost to ENOSPC.
	data, errs := filepath.Join(tmp, "ff.dat"), filepath.Join(tmp, "err.txt")
	script := fmt.Sprintf(`%s record -o "$SLOWDISK_DIR/rec.db" --full -- %s --name=x --filename=%s --size=32m --rw=randread --bs=4k --invalidate=0 --time_based --runtime=15 --output=/dev/null 2>%s
echo "exit $?"
cat %s
%s sql "$SLOWDISK_DIR/rec.db" "SELECT count(*) FROM syscalls" --format csv`,
		filepath.Join(bin, "whyslow"), fio, data, errs, errs, filepath.Join(bin, "whyslow"))
	out, err := exec.Command(filepath.Join(bin, "slowdisk"), "--size", "24M", "--write-bps", "0", "--", "sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	if !strings.Contains(text, "exit 1\n") {
		t.Errorf("a full disk must end record with exit 1:\n%s", text)
	}
	if strings.Count(text, "no space left on device") != 1 || strings.Contains(text, "appender") {
		t.Errorf("want one clear message about the full disk:\n%s", text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if n, _ := strconvAtoi(lines[len(lines)-1]); n < 10000 {
		t.Errorf("the recording kept %d syscalls; want what was flushed before the disk filled:\n%s", n, text)
	}
}

// Hostile or careless input that was accepted (issue 27): a FIFO as the
// recording (it hung every command), a pid the recording does not hold (an
// invented explanation), pids that wrap, and flags that contradict
// themselves. Each gets one line and its documented exit code.
func TestRefusedInput(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	if _, errs, code := whyslow(t, "record", "-o", good, "--", "true"); code != 0 {
		t.Fatalf("record: %s", errs)
	}
	fifo := filepath.Join(dir, "fifo.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "new.db")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"report", "usage", fifo}, 3},
		{[]string{"sql", fifo, "SELECT 1"}, 3},
		{[]string{"report", "explain", good, "--pid", "99999"}, 2},
		{[]string{"report", "html", good, "--pid", "99999", "-o", filepath.Join(dir, "r.html")}, 2},
		{[]string{"record", "-o", out, "-p", "4294967297"}, 2},
		{[]string{"record", "-o", out, "-p", "0"}, 2},
		{[]string{"record", "-o", out, "-d", "-1s"}, 2},
		{[]string{"attach", "-p", "4294967297"}, 2},
		{[]string{"record", "-o", out, "--syscalls", "--full", "--", "true"}, 2},
		{[]string{"report", "usage", good, "--min", "5s", "--max", "1s"}, 2},
		{[]string{"report", "usage", good, "--min", "-5s"}, 2},
		{[]string{"report", "usage", good, "--begin", "+2s", "--end", "+1s"}, 2},
		{[]string{"report", "usage", good, "--pid", "4294967297"}, 2},
		{[]string{"exporter", "--listen", ""}, 2},
		{[]string{"watch", "--dir", dir, "--slow-request", "1s"}, 2}, // requests are followed only with --requests
		{[]string{"watch", "--dir", dir, "--psi", "io:most>5%/5s"}, 2},
		{[]string{"watch", "--dir", dir, "--memory", "1K"}, 2},
		{[]string{"watch", "--dir", dir, "--window", "0s"}, 2},
		{[]string{"watch", "--dir", dir, "--after", "-1s"}, 2},
		{[]string{"watch", "--snapshot", "--dir", filepath.Join(dir, "no-watch")}, 2},
		{[]string{"watch", "--dir", filepath.Join(good, "sub")}, 2}, // a directory under a file
		// an output it cannot write, said before the command runs (it was
		// said after, with exit 0)
		{[]string{"run", "--json", filepath.Join(dir, "no", "x.json"), "--", "true"}, 2},
		{[]string{"run", "--html", filepath.Join(dir, "no", "x.html"), "--", "true"}, 2},
		{[]string{"attach", "-p", "1", "--json", dir}, 2},
		// DuckDB would read what follows '?' as its options
		{[]string{"record", "-o", out + "?access_mode=read_write", "--", "true"}, 2},
		{[]string{"sql", good + "?access_mode=read_write", "SELECT 1"}, 2},
		{[]string{"report", "usage", filepath.Join(dir, "evil\x1b]0;owned\x07.db")}, 2},
	} {
		done := make(chan struct{})
		var errs string
		var code int
		go func() { defer close(done); _, errs, code = whyslow(t, c.args...) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%v hangs", c.args)
		}
		if code != c.code || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "whyslow: ") {
			t.Errorf("%v: exit %d, %q; want exit %d and one line", c.args, code, errs, c.code)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused record left %s behind", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("a refused report html left its file behind")
	}
}

// record -- CMD stops as asked (issue 27): -d ends the recording while the
// command runs on (and says so); SIGTERM to whyslow reaches the command,
// whose end ends a complete recording; a SIGINT sent to whyslow alone
// reaches it too.
func TestRecordCommandStops(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "d.db")
	start := time.Now()
	// Its output to a file: the command, running on, holds a pipe open.
	errFile := filepath.Join(dir, "stderr")
	f, err := os.Create(errFile)
	if err != nil {
		t.Fatal(err)
	}
	d := exec.Command(filepath.Join(bin, "whyslow"), "record", "-o", rec, "-d", "1s", "--", "sleep", "6")
	d.Stdout, d.Stderr = f, f
	d.Run()
	f.Close()
	code := d.ProcessState.ExitCode()
	b, _ := os.ReadFile(errFile)
	errs := string(b)
	if took := time.Since(start); code != 0 || took > 4*time.Second || !strings.Contains(errs, "still runs") {
		t.Errorf("record -d 1s -- sleep 6: exit %d after %v: %q; want the recording ended at 1 s, the command said running", code, took, errs)
	}
	exec.Command("pkill", "-x", "-f", "sleep 6").Run()
	if _, errs, code := whyslow(t, "sql", rec, "SELECT count(*) FROM meta", "--format", "csv"); code != 0 {
		t.Errorf("the recording ended by -d: exit %d: %s", code, errs)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		rec := filepath.Join(dir, sig.String()+".db")
		cmd := exec.Command(filepath.Join(bin, "whyslow"), "record", "-o", rec, "--", "sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the signal reaches whyslow alone
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		start := time.Now()
		cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("%v to record -- sleep 30: still running after 10 s", sig)
		}
		if code := cmd.ProcessState.ExitCode(); code != 128+int(sig) || time.Since(start) > 3*time.Second {
			t.Errorf("%v: exit %d after %v, want the command's 128+%d at once\n%s", sig, code, time.Since(start), sig, errb.String())
		}
		if _, errs, code := whyslow(t, "sql", rec, "SELECT value FROM meta WHERE key = 'end_wall'", "--format", "csv"); code != 0 {
			t.Errorf("the recording ended by %v is not complete: exit %d: %s", sig, code, errs)
		}
	}
}

// With every CPU kept busy by the target's calls, `record --full` holds
// what the rings gave it until the CPUs are free (capture/pace.go), says so,
// and stores every call: one `dd bs=1` per CPU, each read in the recording.
func TestFullHeldWhileCPUsBusy(t *testing.T) {
	harness.RequireRoot(t)
	if _, err := os.Stat("/proc/pressure/cpu"); err != nil {
		t.Skip("no pressure stall information on this kernel: the loader never holds")
	}
	const count = 300000
	jobs := runtime.NumCPU()
	script := strings.Repeat(fmt.Sprintf("dd if=/dev/zero of=/dev/null bs=1 count=%d status=none & ", count), jobs) + "wait"
	rec := filepath.Join(t.TempDir(), "rec.db")
	_, errs, code := whyslow(t, "record", "--full", "-o", rec, "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	t.Log(strings.TrimSpace(errs))
	if !strings.Contains(errs, "held while the CPUs were busy") || strings.Contains(errs, "lost") {
		t.Errorf("record's last line: %q, want what it held said and nothing lost", errs)
	}
	out, errs, code := whyslow(t, "sql", rec, "--format", "csv",
		"SELECT count(*) FROM syscalls WHERE comm = 'dd' AND name = 'read' AND ret = 1")
	if code != 0 {
		t.Fatalf("sql: exit %d: %s", code, errs)
	}
	lines := strings.Fields(out)
	if got := lines[len(lines)-1]; got != strconv.Itoa(jobs*count) {
		t.Errorf("%s one-byte reads of dd recorded, want %d", got, jobs*count)
	}
}
