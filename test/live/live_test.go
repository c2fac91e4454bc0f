// Package live tests `whyslow top` and `whyslow exporter` end to end: a
// writer on the slow disk, the real terminal view driven in tmux, the real
// exporter checked by promtool and scraped by a real Prometheus.
package live

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/test/harness"
)

var bin string

func TestMain(m *testing.M) { harness.Main(m, &bin) }

// TestTopAndExporterSeeTheWriter runs one buffered writer on a slow disk
// with small dirty limits, so that it spends its time throttled, and checks
// that top, its batch mode and the exporter all name it, its reason and its
// file.
func TestTopAndExporterSeeTheWriter(t *testing.T) {
	harness.RequireRoot(t)
	for _, tool := range []string{"tmux", "promtool", "prometheus", "dd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (make deps installs it): %v", tool, err)
		}
	}
	harness.Unchanged(t)
	disk, err := slowdisk.Create(slowdisk.Options{Size: 512 << 20, WriteBPS: 4 << 20,
		DirtyBytes: 8 << 20, DirtyBackground: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := disk.Close(); err != nil {
			t.Errorf("removing the slow disk: %v", err)
		}
	})
	out := filepath.Join(disk.Dir, "live-writer.dat")
	// 400 MiB at 4 MiB/s: it writes for the whole test, and is killed at its end
	start(t, "dd", "if=/dev/zero", "of="+out, "bs=1M", "count=400", "status=none")

	// the exporter and Prometheus start now and scrape while top is tested
	metricsAddr := startExporter(t)
	promAddr := startPrometheus(t, metricsAddr)

	t.Run("top", func(t *testing.T) { testTop(t, out) })
	t.Run("batch", func(t *testing.T) { testBatch(t, out) })
	t.Run("exporter", func(t *testing.T) { testExporter(t, metricsAddr) })
	t.Run("prometheus", func(t *testing.T) { testPrometheus(t, promAddr) })
}

// writerRow matches dd's row: its reason (dirty-throttle, or disk-write when
// writeback holds it) and the file it waits on.
func writerRow(out string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*\d+ dd\s.*(dirty-throttle|disk-write)\s+\S*` + regexp.QuoteMeta(filepath.Base(out)))
}

func testTop(t *testing.T, out string) {
	tm := newTmux(t, filepath.Join(bin, "whyslow"), "top")
	screen := tm.waitFor(t, "the writer with its reason and file", 20*time.Second, func(s string) bool {
		return writerRow(out).MatchString(s)
	})
	if !strings.Contains(screen, "DEVICE") || !strings.Contains(screen, "dirty ") {
		t.Errorf("no device table or dirty line:\n%s", screen)
	}

	// Once in a clean run the three keys were not seen at all (no prompt,
	// no filter): they are typed again once, and the retry is logged.
	screen = tm.sendUntil(t, "the name filter", []string{"/", "dd", "Enter"}, func(s string) bool { return strings.Contains(s, "name~dd") })
	for _, r := range processRows(screen) {
		if f := strings.Fields(r); len(f) < 2 || !strings.Contains(f[1], "dd") {
			t.Errorf("filtered by dd, shows %q", r)
		}
	}

	tm.send(t, ">")
	tm.waitFor(t, "sorting by the next column", 5*time.Second, func(s string) bool { return strings.Contains(s, "sort CPU") })

	tm.send(t, "t")
	tm.waitFor(t, "threads", 5*time.Second, func(s string) bool { return strings.Contains(s, "  threads") })

	tm.send(t, "h")
	tm.waitFor(t, "help", 5*time.Second, func(s string) bool { return strings.Contains(s, "Keys") && strings.Contains(s, "DIRTY ") })
	tm.send(t, "x")
	tm.waitFor(t, "help closed", 5*time.Second, func(s string) bool { return !strings.Contains(s, "Keys") })

	tm.send(t, "p")
	screen = tm.waitFor(t, "pause", 5*time.Second, func(s string) bool { return strings.Contains(s, "PAUSED") })
	paused := clock(screen)
	time.Sleep(2500 * time.Millisecond)
	if now := clock(tm.capture(t)); now != paused {
		t.Errorf("paused at %s, then showed %s", paused, now)
	}
	tm.send(t, "p")
	tm.waitFor(t, "resume", 5*time.Second, func(s string) bool { return !strings.Contains(s, "PAUSED") && clock(s) != paused })

	tm.send(t, "q")
	deadline := time.Now().Add(5 * time.Second)
	for tm.alive() {
		if time.Now().After(deadline) {
			t.Fatalf("q did not quit:\n%s", tm.capture(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b, _ := os.ReadFile(tm.stderr); len(b) > 0 {
		t.Errorf("whyslow top wrote to stderr: %s", b)
	}
}

// processRows are the lines of the process table.
func processRows(screen string) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "PID COMM"):
			in = true
		case in && strings.TrimSpace(l) == "":
			return rows
		case in:
			rows = append(rows, l)
		}
	}
	return rows
}

var clockRe = regexp.MustCompile(`whyslow top  (\d\d:\d\d:\d\d)`)

func clock(screen string) string {
	if m := clockRe.FindStringSubmatch(screen); m != nil {
		return m[1]
	}
	return ""
}

func testBatch(t *testing.T, out string) {
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "top", "--batch", "-n", "3", "--name", "dd")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("top --batch: %v\n%s", err, b)
	}
	s := string(b)
	if n := strings.Count(s, "whyslow top  "); n != 3 {
		t.Errorf("%d frames, want 3:\n%s", n, s)
	}
	if !writerRow(out).MatchString(s) {
		t.Errorf("no writer row with its reason and file:\n%s", s)
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("batch output holds escape sequences")
	}
}

func testExporter(t *testing.T, addr string) {
	var body string
	deadline := time.Now().Add(20 * time.Second)
	want := regexp.MustCompile(`whyslow_wait_seconds_total\{group="dd",reason="(dirty-throttle|disk-write)"\} ([0-9.e+-]+)`)
	for {
		body = get(t, "http://"+addr+"/metrics")
		if waited(want, body) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the writer's waits never reached the metrics:\n%s", grep(body, "whyslow_"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, series := range []string{`whyslow_block_requests_total{device="loop`, `whyslow_block_await_seconds_bucket{device="loop`,
		`whyslow_dirtied_bytes_total{group="dd"}`, `whyslow_capture_up 1`, `whyslow_lost_events_total{source="offcpu"}`} {
		if !strings.Contains(body, series) {
			t.Errorf("no %s in the metrics", series)
		}
	}
	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// waited sums the values of the series re matches.
func waited(re *regexp.Regexp, body string) float64 {
	var sum float64
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		sum += v
	}
	return sum
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func testPrometheus(t *testing.T, addr string) {
	q := "http://" + addr + "/api/v1/query?query=" + url.QueryEscape(`whyslow_wait_seconds_total{group="dd"}`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Metric map[string]string
					Value  []any
				}
			}
		}
		body := get(t, q)
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("query answer %q: %v", body, err)
		}
		if r.Status == "success" && len(r.Data.Result) > 0 {
			for _, s := range r.Data.Result {
				if s.Metric["job"] != "whyslow" || s.Metric["reason"] == "" {
					t.Errorf("series %v", s.Metric)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has no whyslow series: %s", body)
		}
		time.Sleep(time.Second)
	}
}

func get(t *testing.T, u string) string {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v\n%s", u, resp.StatusCode, err, b)
	}
	return string(b)
}

// start runs a command until the test ends.
func start(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	stopAtCleanup(t, cmd)
	return cmd
}

// stopAtCleanup ends cmd when the test ends, passed or failed: SIGTERM, then
// SIGKILL if it lingers.
func stopAtCleanup(t *testing.T, cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
}

// startExporter starts `whyslow exporter` on a free loopback port and
// returns its address once it serves.
func startExporter(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "exporter", "--listen", "127.0.0.1:0", "--group-by", "comm")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, cmd)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`serving http://([^/]+)/metrics`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			} else {
				t.Logf("exporter: %s", sc.Text())
			}
		}
	}()
	select {
	case a := <-addr:
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("the exporter listens on %s, not loopback", a)
		}
		return a
	case <-time.After(15 * time.Second):
		t.Fatal("the exporter did not start serving")
	}
	return ""
}

// startPrometheus runs Debian's Prometheus on a temporary config, data
// directory and port, scraping addr every second.
func startPrometheus(t *testing.T, addr string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: whyslow\n    static_configs:\n      - targets: ['%s']\n", addr)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := freePort(t)
	cmd := exec.Command("prometheus", "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, cmd)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get("http://" + listen + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return listen
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	t.Fatalf("Prometheus did not become ready:\n%s", b)
	return ""
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
