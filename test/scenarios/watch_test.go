package scenarios

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
)

// `whyslow watch` (issue 28): left running before anything goes wrong, it
// must write one incident when something is slow, without anyone running
// `record`, and explain it.

// lockedBuffer is a watch's stderr, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWatch starts `whyslow watch` writing incidents to a new directory,
// and waits until it watches. stop ends it (SIGINT) and returns its stderr.
func startWatch(t *testing.T, args ...string) (dir string, stop func() string) {
	t.Helper()
	dir, stop, _ = startWatchLogging(t, args...)
	return dir, stop
}

// startWatchLogging is startWatch that also returns what watch has written
// to stderr so far, for a test that waits for a line of it.
func startWatchLogging(t *testing.T, args ...string) (dir string, stop, log func() string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "incidents")
	cmd := exec.Command(filepath.Join(bin, "whyslow"), append([]string{"watch", "--dir", dir}, args...)...)
	errb := &lockedBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			cmd.Process.Signal(os.Interrupt)
			if err := cmd.Wait(); err != nil {
				t.Errorf("watch: %v\n%s", err, errb.String())
			}
		}
		return errb.String()
	}
	t.Cleanup(func() { stop() })
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(errb.String(), "whyslow watch: watching"); {
		if time.Now().After(deadline) {
			t.Fatalf("watch did not start:\n%s", stop())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return dir, stop, errb.String
}

// incidentsIn lists the incidents written in dir (their names, oldest first),
// those whose explanation is written.
func incidentsIn(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	var out []string
	for _, p := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".txt"))
	}
	sort.Strings(out)
	return out
}

// waitIncidents waits until n incidents are written.
func waitIncidents(t *testing.T, dir string, n int, limit time.Duration, stderr func() string) []string {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(200 * time.Millisecond) {
		got := incidentsIn(dir)
		if len(got) >= n {
			time.Sleep(300 * time.Millisecond) // its log line follows the files
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d incidents after %v, want %d:\n%s", len(got), limit, n, stderr())
		}
	}
}

// incidentMeta reads an incident recording's metadata.
func incidentMeta(t *testing.T, rec string) map[string]string {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "whyslow"), "sql", rec, "SELECT key, value FROM meta", "--format", "json").Output()
	if err != nil {
		t.Fatalf("reading the incident's meta: %v", err)
	}
	var rows []struct{ Key, Value string }
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("meta: %v\n%s", err, out)
	}
	m := map[string]string{}
	for _, r := range rows {
		m[r.Key] = r.Value
	}
	return m
}

// everyAnalysisOpens runs each analysis on an incident's recording.
func everyAnalysisOpens(t *testing.T, rec string) {
	t.Helper()
	for _, args := range [][]string{
		{"report", "explain", rec}, {"report", "usage", rec}, {"report", "stats", rec}, {"report", "freq", rec},
		{"report", "top", rec}, {"report", "log", rec}, {"export", "folded", rec},
	} {
		if out, err := exec.Command(filepath.Join(bin, "whyslow"), args...).CombinedOutput(); err != nil {
			t.Errorf("%v on an incident: %v\n%s", args[:2], err, firstLines(string(out)))
		}
	}
	if fi, err := os.Stat(rec); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("incident recording %v, mode %v: want 0600", err, fi.Mode())
	}
}

func firstLines(s string) string {
	lines := strings.SplitN(s, "\n", 6)
	return strings.Join(lines[:min(5, len(lines))], "\n")
}

// TestWatchApacheSessionStall: seed 003's stall on Apache + mod_php, with
// `watch --requests --slow-request` started before the workload. The stall
// gives one incident, which names the stalled request (by the first bytes
// it read, before the trigger), its session file and the sync.
func TestWatchApacheSessionStall(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 8 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	fetch, _ := startApacheSessions(t, d.Dir)
	fetch()
	// A budget that holds the whole window on a busy machine too: what the
	// budget drops is tested apart (internal/watch).
	dir, stop := startWatch(t, "--requests", "--slow-request", "1s", "--stall", "0", "--window", "20s",
		"--after", "2s", "--cooldown", "10m", "--memory", "128M")
	worst := slices.Max(fetchBesideNoise(t, fetch, d.Dir, "32"))
	if worst < 1200*time.Millisecond {
		t.Fatalf("no request stalled past the trigger's 1s (client's worst %v): the scenario did not reproduce", worst)
	}
	names := waitIncidents(t, dir, 1, 60*time.Second, stop)
	time.Sleep(3 * time.Second) // a second incident would be written by now
	stderr := stop()
	names = incidentsIn(dir)
	if len(names) != 1 || !strings.HasSuffix(names[0], "-slow-request") {
		t.Fatalf("incidents %v, want one slow-request:\n%s", names, stderr)
	}
	base := filepath.Join(dir, names[0])
	if n := strings.Count(stderr, "whyslow watch: incident "); n != 1 || !strings.Contains(stderr, "verdict:") {
		t.Errorf("want one incident line with its verdict on stderr, got %d:\n%s", n, stderr)
	}
	var r requestsJSON
	b, err := os.ReadFile(base + ".requests.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Requests) == 0 {
		t.Fatalf("the incident's requests: %v\n%s", err, firstLines(string(b)))
	}
	top := r.Requests[0]
	t.Logf("%s %.3fs (client's worst %v): %s", top.Label, top.DurationS, worst, top.Verdict.Summary)
	if top.Label != "GET /session.php" || top.DurationS < 1 || time.Duration(top.DurationS*1e9) > worst+100*time.Millisecond {
		t.Errorf("slowest request %q %.3fs, client's worst %v", top.Label, top.DurationS, worst)
	}
	var sync, session bool
	for _, bl := range top.Blame {
		sync = sync || (bl.Comm == "sync" && bl.Activity == "sync")
	}
	for _, f := range top.Files {
		session = session || strings.Contains(f.Path, "/sessions/sess_")
	}
	if !sync || !session {
		t.Errorf("the stalled request blames sync: %v; names its session file: %v (%+v, %+v)", sync, session, top.Blame, top.Files)
	}
	meta := incidentMeta(t, base+".db")
	trig, _ := strconv.ParseUint(meta["trigger_mono"], 10, 64)
	start, _ := strconv.ParseUint(meta["start_mono"], 10, 64)
	if meta["trigger"] != "slow-request" || trig <= start {
		t.Errorf("trigger %q at %d, recording from %d: the window must hold the time before the trigger", meta["trigger"], trig, start)
	}
	// The stalled request's first bytes, read before the trigger, are in it.
	q := "SELECT count(*) FROM payloads WHERE starts_with(CAST(data AS VARCHAR), 'GET /session.php') AND ts < " + meta["trigger_mono"] + " AND ts >= " + meta["start_mono"]
	if out, err := exec.Command(filepath.Join(bin, "whyslow"), "sql", base+".db", q, "--format", "csv").Output(); err != nil || strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[1]) == "0" {
		t.Errorf("no request's first bytes before the trigger in the incident (%v): %s", err, out)
	}
	text, _ := os.ReadFile(base + ".txt")
	t.Logf("stderr:\n%s\n%s:\n%s", stderr, names[0]+".txt", text)
	if !strings.Contains(string(text), "GET /session.php") || !strings.Contains(string(text), "sync") {
		t.Errorf("the incident's text names neither the request nor sync:\n%s", firstLines(string(text)))
	}
	if _, err := os.Stat(base + ".html"); err != nil {
		t.Error(err)
	}
	everyAnalysisOpens(t, base+".db")
}

// TestWatchThrottledWriter: a writer throttled on a small slow disk stalls
// past --stall in dirty throttling; the incident names it. Then a snapshot
// asked for from another shell is written at once, cooldown or not.
func TestWatchThrottledWriter(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 4 << 20, DirtyBytes: 8 << 20, DirtyBackground: 4 << 20})
	dir, stop := startWatch(t, "--stall", "1s", "--window", "10s", "--after", "1s", "--cooldown", "10m")
	dd := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(d.Dir, "big"), "bs=1M", "count=64")
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Process.Kill(); dd.Wait() })
	names := waitIncidents(t, dir, 1, 60*time.Second, stop)
	dd.Process.Kill()
	dd.Wait()
	base := filepath.Join(dir, names[0])
	meta := incidentMeta(t, base+".db")
	if !strings.HasSuffix(names[0], "-stall") || meta["trigger_pid"] != strconv.Itoa(dd.Process.Pid) {
		t.Fatalf("incident %s for pid %s, want a stall of dd (pid %d):\n%s", names[0], meta["trigger_pid"], dd.Process.Pid, stop())
	}
	var x explanation
	b, _ := os.ReadFile(base + ".json")
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("the incident's explanation: %v", err)
	}
	if r := x.Verdict.Reason; r != "dirty-throttle" && r != "disk-write" {
		text, _ := os.ReadFile(base + ".txt")
		t.Errorf("dd's verdict in the incident: %q (%s), want dirty-throttle\n%s", r, x.Verdict.Summary, text)
	}
	everyAnalysisOpens(t, base+".db")

	// By hand, from another shell: in the cooldown, still written.
	if out, err := exec.Command(filepath.Join(bin, "whyslow"), "watch", "--snapshot", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("watch --snapshot: %v\n%s", err, out)
	}
	names = waitIncidents(t, dir, 2, 60*time.Second, stop)
	if !strings.HasSuffix(names[1], "-snapshot") {
		t.Fatalf("incidents %v: want a snapshot second", names)
	}
	everyAnalysisOpens(t, filepath.Join(dir, names[1]+".db"))
	stop()
	if _, err := os.Stat(filepath.Join(dir, ".watch.pid")); !os.IsNotExist(err) {
		t.Errorf("the watch's pid file outlived it: %v", err)
	}
}

// TestWatchFullDiskMetricsAndKill: a watch whose incident disk is full says
// so once and watches on; with room again it writes the next incident, and
// its metrics count it. Killed with SIGKILL mid-run, the next watch on the
// same directory starts clean.
func TestWatchFullDiskMetricsAndKill(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "incidents")
	os.MkdirAll(dir, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "whyslow-test", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a small tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })

	cmd := exec.Command(filepath.Join(bin, "whyslow"), "watch", "--dir", dir, "--stall", "0", "--window", "5s",
		"--after", "500ms", "--listen", "127.0.0.1:0")
	errb := &lockedBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !strings.Contains(errb.String(), what); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("watch never said %q:\n%s", what, errb.String())
			}
		}
	}
	waitFor("whyslow watch: watching")
	snapshot := func() {
		t.Helper()
		if out, err := exec.Command(filepath.Join(bin, "whyslow"), "watch", "--snapshot", "--dir", dir).CombinedOutput(); err != nil {
			t.Fatalf("watch --snapshot: %v\n%s", err, out)
		}
	}
	snapshot()
	waitFor("incident disk is full")
	if left, _ := filepath.Glob(filepath.Join(dir, "*.db*")); len(left) > 0 {
		t.Errorf("a failed incident left %v", left)
	}
	if partial, _ := filepath.Glob(filepath.Join(dir, ".partial-*")); len(partial) > 0 {
		t.Errorf("a failed incident left %v", partial)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=64m", dir).CombinedOutput(); err != nil {
		t.Fatalf("growing the tmpfs: %v %s", err, out)
	}
	snapshot()
	if names := waitIncidents(t, dir, 1, 60*time.Second, errb.String); !strings.HasSuffix(names[0], "-snapshot") {
		t.Fatalf("incidents %v", names)
	}
	addr := ""
	if _, after, ok := strings.Cut(errb.String(), "serving http://"); ok {
		addr, _, _ = strings.Cut(after, "/metrics")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("metrics at %q: %v", addr, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`whyslow_incidents_total{trigger="snapshot"} 1`, "whyslow_last_incident_timestamp_seconds ", "whyslow_wait_seconds_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	// Killed outright: the next watch starts on the same directory.
	cmd.Process.Kill()
	cmd.Wait()
	os.WriteFile(filepath.Join(dir, ".partial-20261124T000000Z-stall.db"), []byte("half"), 0o600)
	if out, err := exec.Command(filepath.Join(bin, "whyslow"), "watch", "--snapshot", "--dir", dir).CombinedOutput(); err == nil {
		t.Errorf("--snapshot found the killed watch: %s", out)
	}
	dir2, stop := func() (string, func() string) {
		c := exec.Command(filepath.Join(bin, "whyslow"), "watch", "--dir", dir, "--stall", "0", "--window", "5s", "--after", "500ms")
		eb := &lockedBuffer{}
		c.Stderr = eb
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(eb.String(), "whyslow watch: watching"); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				c.Process.Kill()
				t.Fatalf("a watch after SIGKILL did not start:\n%s", eb.String())
			}
		}
		return dir, func() string { c.Process.Signal(os.Interrupt); c.Wait(); return eb.String() }
	}()
	defer stop()
	if partial, _ := filepath.Glob(filepath.Join(dir2, ".partial-*")); len(partial) > 0 {
		t.Errorf("the killed watch's partial incident is still there: %v", partial)
	}
	snapshot()
	waitIncidents(t, dir2, 2, 60*time.Second, stop)
}
