package scenarios

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// Requests as OpenTelemetry traces (issue 44): the nginx + PHP-FPM session
// stall exported to a real Jaeger and read back through its query API.

// jaeger is a Jaeger all-in-one (v2) on free ports with in-memory storage.
type jaeger struct {
	otlp, grpc, query string // the OTLP/HTTP and OTLP/gRPC base URLs, the query service's
	cmd               *exec.Cmd
}

// kill stops Jaeger now, as a crash would (the test's cleanup reaps it).
func (j *jaeger) kill() { syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL) }

// startJaeger starts the jaeger that make deps installs, on a private
// configuration: OTLP/HTTP in, in-memory storage, the query API; it stops
// with the test.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	path, err := exec.LookPath("jaeger")
	if err != nil {
		path = builtInBackground(t, "jaeger", "scripts/jaeger.sh")
	}
	otlpPort, otlpGRPCPort, queryPort, grpcPort := freePort(t), freePort(t), freePort(t), freePort(t)
	conf := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    max_clock_skew_adjust: 0s
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, queryPort, grpcPort, otlpPort, otlpGRPCPort)
	file := filepath.Join(t.TempDir(), "jaeger.yaml")
	os.WriteFile(file, []byte(conf), 0o644)
	cmd := startGroup(t, path, "--config", file)
	waitPort(t, otlpPort)
	waitPort(t, queryPort)
	waitPort(t, otlpGRPCPort)
	return &jaeger{otlp: fmt.Sprintf("http://127.0.0.1:%d", otlpPort), grpc: fmt.Sprintf("http://127.0.0.1:%d", otlpGRPCPort),
		query: fmt.Sprintf("http://127.0.0.1:%d", queryPort), cmd: cmd}
}

// builtInBackground is the program that make test builds in the background
// into GOPATH's bin, holding NAME.lock (script): it waits for the build to
// end, and fails if there is none.
func builtInBackground(t *testing.T, name, script string) string {
	t.Helper()
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	path := filepath.Join(strings.TrimSpace(string(gopath)), "bin", name)
	if _, err := os.Stat(path + ".lock"); err == nil {
		if out, err := exec.Command("timeout", "30m", "flock", path+".lock", "true").CombinedOutput(); err != nil {
			t.Fatalf("waiting for %s's build: %v %s", name, err, out)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is needed (make test builds it: %s; its build's log: %s.log)", name, script, path)
	}
	return path
}

// jaegerSpan is a span as Jaeger's query API gives it: times in µs.
type jaegerSpan struct {
	TraceID    string `json:"traceID"`
	SpanID     string `json:"spanID"`
	Name       string `json:"operationName"`
	References []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	ProcessID string `json:"processID"`
	StartTime int64  `json:"startTime"`
	Duration  int64  `json:"duration"`
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// parent is the span's CHILD_OF reference in its own trace.
func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

type jaegerTrace struct {
	TraceID string       `json:"traceID"`
	Spans   []jaegerSpan `json:"spans"`
	// Processes are the resources of its spans (their ProcessID).
	Processes map[string]struct {
		Service string `json:"serviceName"`
		Tags    []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"processes"`
}

// service is the service a span of the trace was sent under.
func (tr jaegerTrace) service(s jaegerSpan) string { return tr.Processes[s.ProcessID].Service }

// resource is a tag of the resource a span of the trace was sent under.
func (tr jaegerTrace) resource(s jaegerSpan, key string) string {
	for _, t := range tr.Processes[s.ProcessID].Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// everyService reads back the traces of every service Jaeger lists (query:
// the rest of /api/traces's parameters), each trace once.
func (j *jaeger) everyService(t *testing.T, query string) []jaegerTrace {
	t.Helper()
	resp, err := http.Get(j.query + "/api/services")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var services struct {
		Data []string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&services); err != nil {
		t.Fatalf("Jaeger /api/services: %v", err)
	}
	var all []jaegerTrace
	seen := map[string]bool{}
	for _, svc := range services.Data {
		for _, tr := range j.traces(t, "/api/traces?service="+url.QueryEscape(svc)+"&"+query) {
			if !seen[tr.TraceID] {
				seen[tr.TraceID] = true
				all = append(all, tr)
			}
		}
	}
	return all
}

// traces reads back what Jaeger holds: /api/traces of a service, or one
// trace by id.
func (j *jaeger) traces(t *testing.T, path string) []jaegerTrace {
	t.Helper()
	resp, err := http.Get(j.query + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data   []jaegerTrace `json:"data"`
		Errors []any         `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("Jaeger %s: %s %v %v", path, resp.Status, err, out.Errors)
	}
	return out.Data
}

// exportOTLP runs whyslow export otlp and returns its stderr.
func exportOTLP(t *testing.T, rec, endpoint string, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "whyslow"), append([]string{"export", "otlp", rec, "--endpoint", endpoint}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("export otlp: %v\n%s", err, out)
	}
	return string(out)
}

func TestOTLPNginxFPM(t *testing.T) {
	requireRoot(t)
	j := startJaeger(t)
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 8 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	web := startNginxFPM(t, filepath.Join(d.Dir, "sessions"))
	jar := filepath.Join(t.TempDir(), "jar")
	curlTimed(t, web.url, jar)
	stop := recordRequests(t, "record", "-p", strconv.Itoa(web.nginxPID))
	sessionStall(t, web.url, d.Dir, jar)
	// One request from an application's trace: its traceparent right after
	// Host, inside the 128 first bytes whyslow takes.
	traceID, parentID := randomHex(t, 16), randomHex(t, 8)
	tp := "00-" + traceID + "-" + parentID + "-01"
	if out, err := exec.Command("curl", "-sS", "-o", "/dev/null", "-H", "User-Agent:", "-H", "Accept:",
		"-H", "traceparent: "+tp, web.url).CombinedOutput(); err != nil {
		t.Fatalf("curl with a traceparent: %v %s", err, out)
	}
	_, text, rec := stop()
	t.Logf("report requests:\n%s", text)
	t.Log(exportOTLP(t, rec, j.otlp))
	// Every request, not the 10 slowest report requests shows by default.
	out, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "requests", rec, "--json", "--limit", "1000").Output()
	if err != nil {
		t.Fatalf("report requests: %v", err)
	}
	var r proxyRequests
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Requests) != r.Count {
		t.Fatalf("report requests --limit 1000 lists %d of %d requests", len(r.Requests), r.Count)
	}

	// Jaeger's writes are asynchronous: read until every trace is there.
	var all []jaegerTrace
	servers := map[string]jaegerSpan{} // by trace
	for try := 0; try < 50; try++ {
		all = j.everyService(t, "limit=1000&lookback=1h")
		clear(servers)
		for _, tr := range all {
			for _, s := range tr.Spans {
				if s.tag("span.kind") == "server" {
					servers[tr.TraceID] = s
				}
			}
		}
		if len(servers) >= r.Count {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(servers) != r.Count || r.Count != 17 {
		t.Fatalf("Jaeger holds %d request traces, report requests counts %d; want one per request, 17", len(servers), r.Count)
	}
	// Each request is one trace, at its time, lasting what report requests says.
	var traceparentSeen bool
	for _, q := range r.Requests {
		begin, err := time.Parse(time.RFC3339Nano, q.Begin)
		if err != nil {
			t.Fatalf("begin %q: %v", q.Begin, err)
		}
		var match *jaegerSpan
		for _, s := range servers {
			if abs(s.StartTime-begin.UnixMicro()) <= 1 && s.tag("process.pid") == strconv.Itoa(int(q.PID)) {
				match = &s
				break
			}
		}
		if match == nil {
			t.Errorf("no trace for the request at %s (%.6fs)", q.Begin, q.DurationS)
			continue
		}
		if diff := float64(match.Duration)/1e6 - q.DurationS; diff > 0.001 || diff < -0.001 {
			t.Errorf("request at %s: %d µs in Jaeger, %.6fs in report requests", q.Begin, match.Duration, q.DurationS)
		}
		if q.TraceParent != "" {
			traceparentSeen = true
			if q.TraceParent != tp || match.TraceID != traceID || match.parent() != parentID ||
				match.tag("whyslow.trace_id.source") != "traceparent" {
				t.Errorf("the request with traceparent %s (report requests: %q) is in trace %s under %q (%s)",
					tp, q.TraceParent, match.TraceID, match.parent(), match.tag("whyslow.trace_id.source"))
			}
		}
	}
	if !traceparentSeen {
		t.Errorf("no request carries the traceparent %s", tp)
	}
	// Found by its id, too.
	if byID := j.traces(t, "/api/traces/"+traceID); len(byID) != 1 || len(byID[0].Spans) < 2 {
		t.Errorf("trace %s from Jaeger: %+v, want whyslow's spans for the request", traceID, byID)
	}

	// The stalled request: nginx → the php-fpm worker → the write of the
	// session file, blamed on the sync.
	top := r.Requests[0]
	var stalled jaegerTrace
	for _, tr := range all {
		if s, ok := servers[tr.TraceID]; ok && abs(s.Duration-int64(top.DurationS*1e6)) <= 1000 && s.tag("process.pid") == strconv.Itoa(int(top.PID)) {
			stalled = tr
		}
	}
	if stalled.TraceID == "" {
		t.Fatal("no trace for the stalled request")
	}
	byID := map[string]jaegerSpan{}
	for _, s := range stalled.Spans {
		byID[s.SpanID] = s
	}
	server := servers[stalled.TraceID]
	// Each span under the service of the process that spent it (issue 53):
	// nginx answered, a php-fpm worker ran the script.
	services := map[string]bool{}
	for _, s := range stalled.Spans {
		services[stalled.service(s)] = true
	}
	if stalled.service(server) != "nginx" || stalled.resource(server, "process.pid") != strconv.Itoa(int(top.PID)) ||
		stalled.resource(server, "service.instance.id") == "" || !services["php-fpm8.2"] || services["whyslow"] {
		t.Errorf("the stalled request's services: server %q (pid %s), all %v; want nginx, with php-fpm8.2 and no whyslow",
			stalled.service(server), stalled.resource(server, "process.pid"), services)
	}
	if !strings.HasPrefix(server.tag("process.executable.name"), "nginx") || server.tag("http.request.method") != "GET" || server.tag("url.path") != "/index.php" {
		t.Errorf("the stalled request's server span %q: process %q, method %q, path %q", server.Name,
			server.tag("process.executable.name"), server.tag("http.request.method"), server.tag("url.path"))
	}
	var tree []string
	var found bool
	for _, s := range stalled.Spans {
		hop, ok := byID[s.parent()]
		if !ok || !strings.HasPrefix(hop.Name, "php-fpm") || hop.parent() != server.SpanID {
			continue
		}
		tree = append(tree, fmt.Sprintf("%s > %s [%s, blame %s]", hop.Name, s.Name, s.tag("whyslow.reason"), s.tag("whyslow.blame")))
		disk := s.tag("whyslow.reason") == "disk-write" || s.tag("whyslow.reason") == "sync" || s.tag("whyslow.reason") == "dirty-throttle"
		blame := s.tag("whyslow.blame.comm")
		if disk && strings.Contains(s.Name, "/sessions/sess_") && strings.Contains(s.tag("whyslow.file"), "/sessions/sess_") &&
			(blame == "sync" || blame == "dd") && strings.Contains(s.tag("whyslow.blame"), blame) {
			found = true
		}
	}
	t.Logf("under the php-fpm worker:\n%s", strings.Join(tree, "\n"))
	if !found {
		t.Errorf("the stalled request's trace has no php-fpm worker span with a disk write of the session file blamed on sync or dd; under the worker:\n%s",
			strings.Join(tree, "\n"))
	}
}

// TestOTLPGRPC: the slow-request story sent over OTLP/gRPC: its six
// requests are in Jaeger, the slow one's fsync of the session file blamed on
// sync and linked to the span of sync's own trace. (No root: the recording
// is built, not captured.)
func TestOTLPGRPC(t *testing.T) {
	waitsOnly(t) // as every test here: the binary is built for them (harness.Main)
	j := startJaeger(t)
	var rec string
	for _, s := range storetest.Stories {
		if s.Name == "slow-request" {
			rec = s.Record(t)
		}
	}
	t.Log(exportOTLP(t, rec, j.grpc, "--protocol", "grpc"))
	var traces []jaegerTrace
	// The story's times are its own day's: a window from 0 to now holds them.
	query := fmt.Sprintf("limit=100&start=0&end=%d", time.Now().UnixMicro())
	for try := 0; try < 50 && len(traces) < 8; try++ {
		time.Sleep(100 * time.Millisecond)
		traces = j.everyService(t, query)
	}
	spans := map[string]jaegerSpan{}
	var servers int
	var vote, fsync jaegerSpan
	for _, tr := range traces {
		for _, s := range tr.Spans {
			spans[s.TraceID+s.SpanID] = s
			if s.tag("span.kind") == "server" {
				servers++
			}
			if s.Name == "POST /vote/linux" {
				vote = s
			}
			if strings.HasPrefix(s.Name, "sync on /srv/sessions/sess_42") {
				fsync = s
			}
		}
	}
	// Six requests, and the traces of the two processes blamed (sync, tar).
	if servers != 6 || len(traces) != 8 {
		t.Fatalf("%d request traces, %d in all; want the story's 6, and sync's and tar's", servers, len(traces))
	}
	if vote.SpanID == "" || fsync.parent() != vote.SpanID || fsync.tag("whyslow.blame.comm") != "sync" || fsync.tag("whyslow.file") != "/srv/sessions/sess_42" {
		t.Fatalf("the fsync span %+v under POST /vote/linux %q", fsync, vote.SpanID)
	}
	var linked bool
	for _, r := range fsync.References {
		if r.RefType == "FOLLOWS_FROM" {
			s, ok := spans[r.TraceID+r.SpanID]
			linked = linked || ok && s.Name == "sync (pid 4100)"
		}
	}
	if !linked {
		t.Errorf("the fsync span does not link to sync's own: %+v", fsync.References)
	}
}

// TestOTLPWatch: watch --otlp sends the session stall's slow request to
// Jaeger (over gRPC: --otlp-protocol grpc) within 5 s of explaining it; with Jaeger gone, the next incident's
// traces are dropped, counted and said, and watch goes on.
func TestOTLPWatch(t *testing.T) {
	requireRoot(t)
	j := startJaeger(t)
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 8 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	fetch, _ := startApacheSessions(t, d.Dir)
	fetch()
	dir, stop, log := startWatchLogging(t, "--requests", "--slow-request", "1s", "--stall", "0", "--window", "20s",
		"--after", "2s", "--cooldown", "10m", "--memory", "128M", "--otlp", j.grpc, "--otlp-protocol", "grpc")
	worst := slices.Max(fetchBesideNoise(t, fetch, d.Dir, "32"))
	if worst < 1200*time.Millisecond {
		t.Fatalf("no request stalled past the trigger's 1s (client's worst %v): the scenario did not reproduce", worst)
	}
	names := waitIncidents(t, dir, 1, 60*time.Second, stop)
	// Explained when its text, the last of its explanations, was written.
	fi, err := os.Stat(filepath.Join(dir, names[0]+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	explained := fi.ModTime()
	var took time.Duration
	for took == 0 && time.Since(explained) < 5*time.Second {
		for _, tr := range j.everyService(t, "limit=100&lookback=1h") {
			for _, s := range tr.Spans {
				if s.tag("span.kind") == "server" && s.Name == "GET /session.php" && s.Duration >= 1e6 {
					took = time.Since(explained)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if took == 0 {
		t.Fatalf("the slow request is not in Jaeger 5 s after its incident was explained:\n%s", stop())
	}
	t.Logf("the slow request reached Jaeger %v after its incident was explained", took.Round(time.Millisecond))

	// Jaeger gone: a snapshot's incident is dropped, counted, said.
	j.kill()
	if out, err := exec.Command(filepath.Join(bin, "whyslow"), "watch", "--snapshot", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("watch --snapshot: %v %s", err, out)
	}
	waitIncidents(t, dir, 2, 60*time.Second, stop)
	// Three tries, about 3 s, after the export's own analysis: until the
	// drop is said (it was a fixed 10 s; 30 s at most now).
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(log(), "(1 dropped so far)") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	stderr := stop()
	t.Logf("watch:\n%s", stderr)
	if !strings.Contains(stderr, "(1 dropped so far)") || !strings.Contains(stderr, "incidents sent to "+j.grpc+": 1; dropped: 1") {
		t.Errorf("the drop is not counted on stderr:\n%s", stderr)
	}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
