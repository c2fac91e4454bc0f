package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/test/harness"
)

// Requests (issue 12): real servers, started and stopped by the tests, each
// watched by `whyslow attach --requests` while a client measures every
// request; whyslow must find the slow ones without being told when, label
// them and say why.

type requestsJSON struct {
	Schema  string `json:"schema"`
	Count   int    `json:"count"`
	Payload bool   `json:"payload"`
	ByLabel []struct {
		Label   string  `json:"label"`
		Count   int     `json:"count"`
		MaxS    float64 `json:"max_s"`
		Verdict string  `json:"verdict"`
	} `json:"by_label"`
	Requests []struct {
		PID       uint32  `json:"pid"`
		TID       uint32  `json:"tid"`
		Label     string  `json:"label"`
		Begin     string  `json:"begin"`
		DurationS float64 `json:"duration_s"`
		Verdict   struct {
			Reason   string `json:"reason"`
			Summary  string `json:"summary"`
			HeldUpBy *struct {
				Role string `json:"role"`
				PID  uint32 `json:"pid"`
				TID  uint32 `json:"tid"`
			} `json:"held_up_by"`
			Blame *struct {
				PID      uint32 `json:"pid"`
				Activity string `json:"activity"`
			} `json:"blame"`
		} `json:"verdict"`
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
		Blame []struct {
			Comm     string `json:"comm"`
			Activity string `json:"activity"`
		} `json:"blame"`
		Timerange string `json:"timerange"`
		Peer      string `json:"peer"`
	} `json:"requests"`
}

// attachRequests starts `whyslow attach --requests` on pid; stop ends it and
// returns the requests it found, and the recording.
func attachRequests(t *testing.T, pid int) (stop func() (*requestsJSON, string)) {
	t.Helper()
	dir := t.TempDir()
	rec, js := filepath.Join(dir, "rec.db"), filepath.Join(dir, "requests.json")
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "attach", "-p", strconv.Itoa(pid), "--requests", "-o", rec, "--json", js)
	errb := harness.StartRecorder(t, cmd)
	return func() (*requestsJSON, string) {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("attach --requests: %v\n%s", err, errb.String())
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatalf("no requests JSON: %v\n%s", err, errb.String())
		}
		var r requestsJSON
		if err := json.Unmarshal(b, &r); err != nil || r.Schema != "whyslow.requests/v1" {
			t.Fatalf("requests JSON: %v %q", err, r.Schema)
		}
		return &r, rec
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitPort(t *testing.T, port int) {
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("port %d never opened", port)
}

// get fetches url and returns how long it took, as the client saw it.
func get(t *testing.T, c *http.Client, url string) time.Duration {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	resp, done, err := doTimed(t, c, req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return done()
}

// TestRequestsWordPop: the seed's Flask app, threaded, on a slow disk.
// /popularity writes and reads 1000 temp files per request; /popular does not.
func TestRequestsWordPop(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 3 << 20, DirtyBytes: 4 << 20, DirtyBackground: 2 << 20})
	port := freePort(t)
	app := exec.Command(harness.Python(t), filepath.Join(repo, "examples", "word-pop", "app.py"))
	app.Env = append(os.Environ(), "WORDPOP_SCRATCH="+d.Dir, fmt.Sprintf("WORDPOP_PORT=%d", port))
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { app.Process.Kill(); app.Wait() }()
	waitPort(t, port)

	stop := attachRequests(t, app.Process.Pid)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{} // keep-alive: several requests on a connection
	var fast []time.Duration
	for range 5 {
		fast = append(fast, get(t, client, base+"/popular/linux"))
	}
	slow := get(t, client, base+"/popularity/linux?n=1")
	r, rec := stop()
	matchClients(t, rec)

	labels := map[string]int{}
	for _, l := range r.ByLabel {
		labels[l.Label] = l.Count
	}
	if labels["GET /popular/linux"] != 5 || labels["GET /popularity/linux"] != 1 || !r.Payload {
		t.Fatalf("labels %v (payload %v), want 5 GET /popular/linux and 1 GET /popularity/linux (query dropped)", labels, r.Payload)
	}
	top := r.Requests[0]
	if top.Label != "GET /popularity/linux" {
		t.Fatalf("slowest request %q, want /popularity", top.Label)
	}
	if top.Verdict.Reason != "dirty-throttle" && top.Verdict.Reason != "disk-write" {
		t.Errorf("slow request verdict %s (%s), want a disk write reason", top.Verdict.Reason, top.Verdict.Summary)
	}
	if !strings.Contains(top.Verdict.Summary, "/*/*.txt") {
		t.Errorf("slow request summary %q does not name the temp files", top.Verdict.Summary)
	}
	// Server-side time agrees with the client's, within the connection's set-up.
	server := time.Duration(top.DurationS * 1e9)
	if server > slow || slow-server > 100*time.Millisecond {
		t.Errorf("server-side %v, client %v", server, slow)
	}
	for _, q := range r.Requests[1:] {
		if q.DurationS > 0.5 || q.Label != "GET /popular/linux" {
			t.Errorf("fast request %s took %.3fs server-side (client: %v)", q.Label, q.DurationS, fast)
		}
	}
	// The label filter and zooming work on the kept recording.
	out, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "requests", rec, "--label", "GET /popular/*", "--json").Output()
	var only requestsJSON
	if err != nil || json.Unmarshal(out, &only) != nil || only.Count != 5 {
		t.Errorf("--label: %v, %d requests\n%s", err, only.Count, out)
	}
	if log, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "log", rec, "--timerange", top.Timerange).CombinedOutput(); err != nil || !strings.Contains(string(log), ".txt") {
		t.Errorf("zooming with --timerange %s: %v\n%.2000s", top.Timerange, err, log)
	}
}

// apacheModules finds Debian's Apache module directory and mod_php.
func apacheModules(t *testing.T) (dir, php string) {
	dir = "/usr/lib/apache2/modules"
	matches, _ := filepath.Glob(filepath.Join(dir, "libphp*.so"))
	if _, err := exec.LookPath("apache2"); err != nil || len(matches) == 0 {
		t.Fatal("apache2 and libapache2-mod-php are needed (make deps installs them)")
	}
	return dir, matches[0]
}

const sessionPHP = `<?php
session_start();
$_SESSION['visits'] = ($_SESSION['visits'] ?? 0) + 1;
$_SESSION['pad'] = str_repeat('x', 2000);
echo "visits: " . $_SESSION['visits'] . "\n";
`

// startApacheSessions starts Apache prefork with mod_php, keeping PHP
// sessions under dir (a slow disk's), stopped when the test ends. fetch
// asks for session.php with the session's cookie and returns the latency;
// pid is Apache's parent.
func startApacheSessions(t *testing.T, dir0 string) (fetch func() time.Duration, pid int) {
	t.Helper()
	url, pid, aerr := startApache(t, dir0, "StartServers 3\nMinSpareServers 3\nMaxSpareServers 5")
	client := &http.Client{} // keep-alive: Apache serves several requests on a connection
	jar := ""
	fetch = func() time.Duration {
		req, _ := http.NewRequest("GET", url, nil)
		if jar != "" {
			req.Header.Set("Cookie", jar)
		}
		resp, done, err := doTimed(t, client, req)
		if err != nil {
			t.Fatalf("%v\n%s", err, aerr.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := done()
		if c := resp.Header.Get("Set-Cookie"); c != "" {
			jar, _, _ = strings.Cut(c, ";")
		}
		if !strings.HasPrefix(string(body), "visits: ") {
			t.Fatalf("PHP did not answer: %q\n%s", body, aerr.String())
		}
		return took
	}
	return fetch, pid
}

// startApache starts Apache prefork with mod_php serving session.php, with
// its workers' numbers set by spares (StartServers, MinSpareServers,
// MaxSpareServers), keeping PHP sessions under dir0, stopped when the test
// ends. It returns session.php's URL, the parent's pid, and its stderr.
func startApache(t *testing.T, dir0, spares string) (url string, pid int, aerr *bytes.Buffer) {
	t.Helper()
	mods, php := apacheModules(t)
	// The workers run as nobody: the document root must be reachable by it.
	dir, err := os.MkdirTemp("", "whyslow-apache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	www, sessions := filepath.Join(dir, "www"), filepath.Join(dir0, "sessions")
	os.MkdirAll(www, 0o755)
	os.Chmod(dir, 0o755)
	os.MkdirAll(sessions, 0o1777)
	os.Chmod(sessions, 0o1777)
	os.WriteFile(filepath.Join(www, "session.php"), []byte(sessionPHP), 0o644)
	port := freePort(t)
	conf := fmt.Sprintf(`ServerRoot %[1]s
LoadModule mpm_prefork_module %[2]s/mod_mpm_prefork.so
LoadModule authz_core_module %[2]s/mod_authz_core.so
LoadModule php_module %[3]s
User nobody
Group nogroup
Listen 127.0.0.1:%[4]d
ServerName localhost
PidFile %[1]s/httpd.pid
ErrorLog %[1]s/error.log
DocumentRoot %[5]s
%[7]s
<Directory %[5]s>
  AllowOverride None
  Require all granted
</Directory>
<FilesMatch "\.php$">
  SetHandler application/x-httpd-php
</FilesMatch>
php_admin_value session.save_path %[6]s
`, dir, mods, php, port, www, sessions, spares)
	os.WriteFile(filepath.Join(dir, "httpd.conf"), []byte(conf), 0o644)
	apache := exec.Command("apache2", "-f", filepath.Join(dir, "httpd.conf"), "-D", "FOREGROUND")
	apache.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	apache.Stderr = &stderr
	if err := apache.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		apache.Process.Signal(syscall.SIGTERM) // graceful-stop: the workers go too
		done := make(chan struct{})
		go func() { apache.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-apache.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	waitPort(t, port)
	return fmt.Sprintf("http://127.0.0.1:%d/session.php", port), apache.Process.Pid, &stderr
}

// TestRequestsApacheSessionStall: the LTTng story on its own stack. Apache
// prefork with mod_php keeps PHP sessions on a slow disk; its workers exist
// before whyslow attaches. Another process dirties data and runs sync, and
// one request stalls writing its session. report requests must find that
// request, label it, and blame the sync.
// fetchBesideNoise fetches 16 times, 250 ms apart, while from the fifth on
// examples/session-stall/noisy.sh writes `files` MiB under dir and
// syncs; it returns the client's latencies.
func fetchBesideNoise(t *testing.T, fetch func() time.Duration, dir, files string) []time.Duration {
	t.Helper()
	noisy := exec.Command("sh", filepath.Join(repo, "examples", "session-stall", "noisy.sh"), dir, files)
	var latencies []time.Duration
	for i := range 16 {
		if i == 4 {
			if err := noisy.Start(); err != nil {
				t.Fatal(err)
			}
		}
		latencies = append(latencies, fetch())
		time.Sleep(250 * time.Millisecond)
	}
	noisy.Wait()
	return latencies
}

func TestRequestsApacheSessionStall(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 8 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	fetch, pid := startApacheSessions(t, d.Dir)
	fetch() // the session exists before the recording

	stop := attachRequests(t, pid)
	latencies := fetchBesideNoise(t, fetch, d.Dir, "24")
	r, rec := stop()
	matchClients(t, rec)

	var worst time.Duration
	for _, l := range latencies {
		worst = max(worst, l)
	}
	if worst < 200*time.Millisecond {
		t.Fatalf("no request stalled (client latencies %v): the scenario did not reproduce", latencies)
	}
	if r.Count < 16 {
		t.Errorf("%d requests found, want the 16 sent", r.Count)
	}
	if out, err := exec.Command(filepath.Join(bin, "whyslow"), "sql", rec, "SELECT count(DISTINCT ino) FROM syscalls WHERE name IN ('accept', 'accept4')", "--format", "csv").Output(); err != nil || strings.TrimSpace(string(out)) == "count(DISTINCT ino)\n16" {
		t.Errorf("no keep-alive: every request had its own connection (%v, %s)", err, out)
	}
	top := r.Requests[0]
	if top.Label != "GET /session.php" || top.DurationS < 0.15 || time.Duration(top.DurationS*1e9) > worst {
		t.Fatalf("slowest request %q %.3fs (client's worst %v)", top.Label, top.DurationS, worst)
	}
	t.Logf("%s %.3fs (client's worst %v): %s: %s", top.Label, top.DurationS, worst, top.Verdict.Reason, top.Verdict.Summary)
	var sync bool
	for _, b := range top.Blame {
		sync = sync || (b.Comm == "sync" && b.Activity == "sync")
	}
	if !sync {
		t.Errorf("the stalled request does not blame sync: %s %+v", top.Verdict.Summary, top.Blame)
	}
	var session bool
	for _, f := range top.Files {
		session = session || strings.Contains(f.Path, "/sessions/sess_")
	}
	if !session {
		t.Errorf("the session file is not among the stalled request's files: %+v", top.Files)
	}
}

// TestRequestsApachePrefork (issue 42): the stall as curl users meet it,
// each request on a new connection, accepted by whichever prefork worker is
// free (Apache defers the accept until the request's bytes come). While one
// request stalls behind another process's sync, six more of the same session
// come at once and wait for its lock: Apache forks workers, then retires the
// idle ones, waking each with a connection of its own (OPTIONS *). Every
// request counted is one a client sent, inside the client's time; the
// stalled one within 80-102% of the client's, its sync blamed.
func TestRequestsApachePrefork(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 8 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	url, pid, _ := startApache(t, d.Dir, "StartServers 3\nMinSpareServers 2\nMaxSpareServers 3")
	dir := t.TempDir()
	jar := filepath.Join(dir, "jar")
	curlTimed(t, url, jar) // the session exists before the recording
	cookie, _ := os.ReadFile(jar)

	stop := recordRequests(t, "record", "-p", strconv.Itoa(pid))
	noisy := exec.Command("sh", filepath.Join(repo, "examples", "session-stall", "noisy.sh"), d.Dir, "24")
	var latencies []time.Duration
	var burst sync.WaitGroup
	burstAt := -1
	for i := range 16 {
		if i == 4 {
			if err := noisy.Start(); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan time.Duration)
		go func() { done <- curlTimed(t, url, jar) }()
		select {
		case l := <-done:
			latencies = append(latencies, l)
		case <-time.After(150 * time.Millisecond):
			if burstAt < 0 && i >= 4 { // stalled by the noise: six more of the session now
				burstAt = i
				for j := range 6 {
					own := filepath.Join(dir, "jar"+strconv.Itoa(j))
					os.WriteFile(own, cookie, 0o600)
					burst.Add(1)
					go func() { defer burst.Done(); curlTimed(t, url, own) }()
				}
			}
			latencies = append(latencies, <-done)
		}
		time.Sleep(250 * time.Millisecond)
	}
	burst.Wait()
	noisy.Wait()
	time.Sleep(1500 * time.Millisecond) // Apache retires a spare worker a second
	r, text, rec := stop()
	t.Logf("client latencies %v (the burst at %d)\nreport requests:\n%s", latencies, burstAt, text)
	if burstAt < 0 {
		t.Fatalf("no request stalled (client latencies %v): the scenario did not reproduce", latencies)
	}
	out, err := exec.Command(filepath.Join(bin, "whyslow"), "sql", rec, fmt.Sprintf("SELECT count(*) FROM syscalls WHERE pid = %d AND name = 'connect'", pid), "--format", "csv").Output()
	if f := strings.Fields(string(out)); err != nil || len(f) != 2 || f[1] == "0" {
		t.Errorf("Apache's parent woke no worker with a connection of its own (%v, %q): the phantom case was not met", err, out)
	}
	if r.Count != 16+6 {
		t.Errorf("%d requests counted, want the %d sent", r.Count, 16+6)
	}
	seen, clients := matchClients(t, rec)
	stalled := latencies[burstAt]
	var found bool
	for i, q := range seen {
		if c, ok := clients[i]; !ok || c.took != stalled {
			continue
		}
		found = true
		server := time.Duration(q.DurationS * 1e9)
		if server < stalled*80/100 || server > stalled*102/100 {
			t.Errorf("the stalled request %v server-side, %v at the client: want 80-102%%", server, stalled)
		}
		var sync bool
		for _, b := range q.Blame {
			sync = sync || b.Comm == "sync" && b.Activity == "sync"
		}
		if !sync {
			t.Errorf("the stalled request does not blame sync: %s: %s %+v", q.Verdict.Reason, q.Verdict.Summary, q.Blame)
		}
	}
	if !found {
		t.Errorf("the stalled request (%v at the client) was not counted", stalled)
	}
}
