package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// A trace joined with the application's own (issue 53, item 6): an
// application instrumented with OpenTelemetry's Python SDK calls nginx with
// a W3C traceparent; whyslow's spans of that request land in the
// application's trace in Jaeger, under the application's span.

// otelPython is the directory holding OpenTelemetry's Python SDK, as
// scripts/deps.sh installs it (make test runs it).
func otelPython(t *testing.T, python string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "whyslow", "otel-python")
	check := exec.Command(python, "-c", "import opentelemetry.sdk.trace, opentelemetry.exporter.otlp.proto.http.trace_exporter")
	check.Env = append(os.Environ(), "PYTHONPATH="+dir)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("OpenTelemetry's Python SDK is needed in %s (make deps installs it: scripts/deps.sh): %v\n%s", dir, err, out)
	}
	return dir
}

// startShop starts testdata/otel_app.py in front of backend, its spans
// sent to Jaeger; it stops with the test.
func startShop(t *testing.T, j *jaeger, backend string) string {
	t.Helper()
	python := harness.Python(t)
	port := freePort(t)
	c := exec.Command(python, filepath.Join(repo, "test", "scenarios", "testdata", "otel_app.py"), strconv.Itoa(port))
	c.Env = append(os.Environ(), "PYTHONPATH="+otelPython(t, python), "BACKEND_URL="+backend,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+j.otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	var stderr strings.Builder
	c.Stderr = &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		c.Wait()
		if stderr.Len() > 0 {
			t.Logf("the application's stderr:\n%s", stderr.String())
		}
	})
	waitPort(t, port)
	return fmt.Sprintf("http://127.0.0.1:%d/checkout", port)
}

// TestOTLPJoinsAppTrace: the application's request to nginx carries its
// traceparent; recorded from nginx and exported to the Jaeger the
// application sends its own spans to, the trace of that id holds the
// application's server and client spans and whyslow's: nginx's server span
// the child of the application's client span (the traceparent's parent-id),
// the PHP-FPM worker's under it. A request without a traceparent is a trace
// of its own.
func TestOTLPJoinsAppTrace(t *testing.T) {
	requireRoot(t)
	j := startJaeger(t)
	web := startNginxFPMSessions(t)
	shop := startShop(t, j, web.url)

	stop := recordRequests(t, "record", "-p", strconv.Itoa(web.nginxPID))
	out, err := exec.Command("curl", "-sS", "--fail", shop).Output()
	if err != nil {
		t.Fatalf("curl %s: %v %s", shop, err, out)
	}
	var app struct {
		TraceID      string `json:"trace_id"`
		ServerSpanID string `json:"server_span_id"`
		ClientSpanID string `json:"client_span_id"`
		TraceParent  string `json:"traceparent"`
	}
	if err := json.Unmarshal(out, &app); err != nil {
		t.Fatalf("the application's answer %q: %v", out, err)
	}
	// Its flags: sampled, and (Trace Context level 2) a random trace id.
	if !strings.HasPrefix(app.TraceParent, "00-"+app.TraceID+"-"+app.ClientSpanID+"-") {
		t.Fatalf("the application sent traceparent %q, not its client span's (%+v)", app.TraceParent, app)
	}
	// A request of no application's trace.
	if out, err := exec.Command("curl", "-sS", "--fail", "-o", "/dev/null", web.url).CombinedOutput(); err != nil {
		t.Fatalf("curl %s: %v %s", web.url, err, out)
	}
	r, text, rec := stop()
	t.Logf("report requests:\n%s", text)
	var joined, own int
	for _, q := range r.Requests {
		switch q.TraceParent {
		case app.TraceParent:
			joined++
		case "":
			own++
		default:
			t.Errorf("request %q at %s carries traceparent %q; the application sent %q", q.Label, q.Begin, q.TraceParent, app.TraceParent)
		}
	}
	if r.Count != 2 || joined != 1 || own != 1 {
		t.Fatalf("%d requests, %d with the application's traceparent, %d without; want 2: 1 and 1", r.Count, joined, own)
	}
	t.Log(exportOTLP(t, rec, j.otlp))

	// The application's trace, by its id: the application's spans (sent as
	// they ended) and whyslow's (sent now).
	var tr jaegerTrace
	for try := 0; try < 50; try++ {
		if got := j.traces(t, "/api/traces/"+app.TraceID); len(got) == 1 {
			tr = got[0]
			services := map[string]bool{}
			for _, s := range tr.Spans {
				services[tr.service(s)] = true
			}
			if services["shop"] && services["nginx"] {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	byID := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
	}
	appServer, appClient := byID[app.ServerSpanID], byID[app.ClientSpanID]
	if tr.service(appServer) != "shop" || appServer.tag("span.kind") != "server" ||
		tr.service(appClient) != "shop" || appClient.tag("span.kind") != "client" || appClient.parent() != app.ServerSpanID {
		t.Fatalf("trace %s holds %d spans; want the application's server span %s and its client span %s under it:\n%s",
			app.TraceID, len(tr.Spans), app.ServerSpanID, app.ClientSpanID, describeTrace(tr))
	}
	var nginx []jaegerSpan
	for _, s := range tr.Spans {
		if tr.service(s) == "nginx" && s.tag("span.kind") == "server" {
			nginx = append(nginx, s)
		}
	}
	if len(nginx) != 1 {
		t.Fatalf("trace %s has %d server spans of nginx, want whyslow's one:\n%s", app.TraceID, len(nginx), describeTrace(tr))
	}
	srv := nginx[0]
	if srv.parent() != app.ClientSpanID || srv.Name != "GET /index.php" || srv.tag("whyslow.trace_id.source") != "traceparent" {
		t.Errorf("whyslow's server span %q (%s) is under %q; want it under the application's client span %s:\n%s",
			srv.Name, srv.tag("whyslow.trace_id.source"), srv.parent(), app.ClientSpanID, describeTrace(tr))
	}
	// It lies within the application's call (one clock: the machine's).
	if srv.StartTime < appClient.StartTime || srv.StartTime+srv.Duration > appClient.StartTime+appClient.Duration+1 {
		t.Errorf("whyslow's server span [%d, +%d µs] is not inside the application's client span [%d, +%d µs]",
			srv.StartTime, srv.Duration, appClient.StartTime, appClient.Duration)
	}
	// Every span of whyslow's is under the application's server span,
	// and the PHP-FPM worker's among them.
	var whyslow int
	services := map[string]bool{}
	for _, s := range tr.Spans {
		if tr.service(s) == "shop" {
			continue
		}
		whyslow++
		services[tr.service(s)] = true
		a, hops := s, 0
		for a.SpanID != app.ServerSpanID && hops < 100 {
			p, ok := byID[a.parent()]
			if !ok {
				break
			}
			a, hops = p, hops+1
		}
		if a.SpanID != app.ServerSpanID {
			t.Errorf("whyslow's span %q (%s) is not under the application's server span", s.Name, tr.service(s))
		}
	}
	if whyslow < 3 || !services["php-fpm8.2"] {
		t.Errorf("the trace holds %d spans of whyslow's, of %v; want nginx's request and the PHP-FPM worker's:\n%s", whyslow, services, describeTrace(tr))
	}
	t.Logf("trace %s:\n%s", app.TraceID, describeTrace(tr))
	// The request without a traceparent is a trace of whyslow's own.
	for _, other := range j.everyService(t, "limit=100&lookback=1h") {
		if other.TraceID == app.TraceID {
			continue
		}
		for _, s := range other.Spans {
			if other.service(s) == "shop" {
				t.Errorf("the application's span %q is in trace %s, not its own %s", s.Name, other.TraceID, app.TraceID)
			}
			if s.tag("span.kind") == "server" && s.tag("whyslow.trace_id.source") != "whyslow" {
				t.Errorf("request %q of trace %s: trace id source %q, want whyslow", s.Name, other.TraceID, s.tag("whyslow.trace_id.source"))
			}
		}
	}
}

// describeTrace is a trace's spans, a line each: service, name, id, parent.
func describeTrace(tr jaegerTrace) string {
	var b strings.Builder
	for _, s := range tr.Spans {
		fmt.Fprintf(&b, "  %s: %q %s under %q (%s)\n", tr.service(s), s.Name, s.SpanID, s.parent(), s.tag("span.kind"))
	}
	return b.String()
}
