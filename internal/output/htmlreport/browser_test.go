package htmlreport

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest/hostile"
)

// chromium finds Debian's headless Chromium (scripts/deps.sh installs it):
// missing fails the test in CI and skips it elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing (apt-get install chromium; make deps)")
	}
	t.Skip("chromium is missing (make deps)")
	return ""
}

// fixtureReport renders the storetest recording's report.
func fixtureReport(t *testing.T) []byte {
	t.Helper()
	path := hostile.Build(t, t.TempDir())
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	src := explain.NewSource(rec)
	x, err := explain.Explain(src, hostile.PID)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Recording: path, Meta: src.Meta, Explanation: x, ExplainedRequests: 5}
	if r.Timeline, err = explain.ThreadTimeline(src, x, 24); err != nil {
		t.Fatal(err)
	}
	r.WindowStartWallNS = src.Clock.Wall(r.Timeline.StartMono).UnixNano()
	if r.Series, err = reports.TimeSeries(src.Source, 40); err != nil {
		t.Fatal(err)
	}
	if r.Stacks, err = reports.Stacks(src.Source, reports.StackOptions{OffCPU: true}); err != nil {
		t.Fatal(err)
	}
	f := source.NoFilter()
	if r.Requests, err = requests.Find(src, requests.Options{Filter: f, Explained: 5}); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReportInChromium renders the report in a real headless Chromium: the
// DOM after the scripts ran must hold the charts and tables, the browser
// must log no console message or error, and the recording's hostile names
// must stay text. The screenshot is kept in the test's artifacts directory
// (WHYSLOW_ARTIFACTS, or a temporary one).
func TestReportInChromium(t *testing.T) {
	bin := chromium(t)
	page := fixtureReport(t)
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	if err := os.WriteFile(html, page, 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := os.Getenv("WHYSLOW_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	shot := filepath.Join(artifacts, "report.png")

	// Offline: no proxy, no DNS; the page's CSP forbids loads anyway.
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--proxy-server=127.0.0.1:9", "--enable-logging=stderr", "--v=0", "--window-size=1280,2400",
		"--virtual-time-budget=5000", "--user-data-dir=" + filepath.Join(dir, "profile")}
	run := func(extra ...string) (string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, append(append(args, extra...), "file://"+html)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium: %v\n%s", err, errb.String())
		}
		return out.String(), errb.String()
	}
	dom, logs := run("--dump-dom")
	if _, more := run("--screenshot=" + shot); more != "" {
		logs += more
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 20_000 {
		t.Errorf("screenshot %s: %v (a blank page is small)", shot, err)
	}
	t.Logf("screenshot: %s", shot)

	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Content Security Policy") {
			t.Errorf("browser console: %s", line)
		}
	}
	if m := regexp.MustCompile(`data-errors="([^"]*)"`).FindStringSubmatch(dom); m != nil {
		t.Errorf("script errors: %s", m[1])
	}
	// Every chart drew into its container (ECharts' SVG renderer).
	for _, id := range []string{"chart-shares", "chart-timeline", "chart-util", "chart-devices", "chart-pages", "chart-requests", "chart-flame"} {
		i := strings.Index(dom, `id="`+id+`"`)
		if i < 0 {
			t.Errorf("%s is missing", id)
			continue
		}
		if rest := dom[i:]; !strings.Contains(rest[:min(len(rest), 4000)], "<svg") {
			t.Errorf("%s holds no drawing", id)
		}
	}
	// Charts hold their data: the flame graph names the kernel frames, the
	// timeline the threads, the shares the reasons.
	// The %util chart names each device beside the target's storage waits.
	for _, want := range []string{">io_schedule<", ">ext4_write_begin<", ">server (100)<", ">disk-write<", "%util<", ">target threads waiting on storage<"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %s", want)
		}
	}
	// Tables: threads, files, devices, requests by label; each with rows.
	for _, section := range []string{"threads", "files", "devices", "requests"} {
		i := strings.Index(dom, `<section id="`+section+`"`)
		body := ""
		if i >= 0 {
			body = dom[i:]
			body = body[:strings.Index(body, "</section>")]
		}
		if !regexp.MustCompile(`<tbody>\s*<tr>`).MatchString(body) {
			t.Errorf("section %s has no table rows", section)
		}
	}
	// The slow request's dot links to its explanation.
	if !strings.Contains(dom, `id="request-1"`) {
		t.Error("the slowest request has no section to link to")
	}
	// Hostile strings stayed text: no element came from the recording.
	for _, bad := range []string{"<img src=x>", "<script>alert", "<b>x</b>"} {
		if strings.Contains(dom, bad) {
			t.Errorf("%q reached the DOM as markup", bad)
		}
	}
	if !strings.Contains(dom, "&lt;script&gt;alert(1)&lt;/script&gt;.bin") {
		t.Error("the hostile file name is not shown as text")
	}
}

// TestReportLoadsNothing: the file is self-contained, with no reference to
// anything outside it.
func TestReportLoadsNothing(t *testing.T) {
	// ECharts' own code builds an <img> for its "save as image" tool, unused.
	page := strings.Replace(string(fixtureReport(t)), echartsJS, "", 1)
	for _, ref := range regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]*(src|href)=`).FindAllString(page, -1) {
		t.Errorf("the page loads something: %s", ref)
	}
	if !strings.Contains(page, "default-src 'none'") {
		t.Error("no Content-Security-Policy forbidding loads")
	}
	// Scripts run by nonce only: every script of the page carries it, and
	// the policy allows no other inline script.
	csp := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]{16,})'`).FindStringSubmatch(page)
	if csp == nil || strings.Contains(page, "script-src 'unsafe-inline'") {
		t.Fatal("the Content-Security-Policy does not allow scripts by nonce only")
	}
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1)
	for _, s := range scripts {
		if s != `<script nonce="`+csp[1]+`">` {
			t.Errorf("a script without the page's nonce: %s", s)
		}
	}
	if len(scripts) < 4 {
		t.Errorf("%d scripts on the page, want its 4", len(scripts))
	}
	if n := len(page); n > 2<<20 {
		t.Errorf("the page is %d bytes: too heavy", n)
	}
}

// TestRequestsLead: a recording that holds requests is a server's, and its
// page opens with them, before the verdict on the whole recording.
func TestRequestsLead(t *testing.T) {
	page := string(fixtureReport(t))
	req, verdict := strings.Index(page, `<section id="requests">`), strings.Index(page, `<section id="verdict">`)
	if req < 0 || verdict < 0 || req > verdict {
		t.Errorf("requests section at %d, verdict at %d: want the requests first", req, verdict)
	}
	if strings.Count(page, `<section id="requests">`) != 1 {
		t.Errorf("the requests section is on the page %d times", strings.Count(page, `<section id="requests">`))
	}
}

// TestNamesShowEscaped: a traced program's name with a terminal escape and
// a right-to-left override shows them escaped on the page and in its chart
// data, as the terminal output does (issue 27): raw, U+202E reversed the
// name in the browser.
func TestNamesShowEscaped(t *testing.T) {
	page := string(fixtureReport(t))
	if strings.ContainsAny(page, "\x1b\x07\u202e") {
		i := strings.IndexAny(page, "\x1b\x07\u202e")
		t.Errorf("raw control or bidi character on the page: %q", page[max(0, i-80):min(len(page), i+80)])
	}
}
