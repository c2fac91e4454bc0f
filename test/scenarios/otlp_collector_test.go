package scenarios

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The second receiver (issue 53, item 3): the OpenTelemetry Collector,
// a core distribution built from its Go modules (scripts/otelcol: the OTLP
// receiver into the file exporter), takes what whyslow sends and writes it
// as OTLP JSON; the test reads the resources and attributes back.

// collector is an OpenTelemetry Collector on free ports, writing the
// traces it receives to file.
type collector struct {
	otlp, grpc string // the OTLP/HTTP and OTLP/gRPC base URLs
	file       string
}

// startCollector starts the Collector that make test builds
// (scripts/otelcol.sh) on a private configuration in a temporary
// directory; it stops with the test.
func startCollector(t *testing.T) *collector {
	t.Helper()
	path := builtInBackground(t, "otelcol-whyslow", "scripts/otelcol.sh")
	// Built from this checkout's scripts/otelcol: a binary of other sources
	// would test another Collector.
	var src []byte
	for _, f := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(repo, "scripts", "otelcol", f))
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	sum := sha256.Sum256(src)
	if built, _ := os.ReadFile(path + ".sha256"); strings.TrimSpace(string(built)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("%s was built from other sources than scripts/otelcol: run scripts/otelcol.sh (make test does)", path)
	}
	dir := t.TempDir()
	httpPort, grpcPort := freePort(t), freePort(t)
	c := &collector{otlp: fmt.Sprintf("http://127.0.0.1:%d", httpPort), grpc: fmt.Sprintf("http://127.0.0.1:%d", grpcPort),
		file: filepath.Join(dir, "traces.json")}
	conf := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
      grpc:
        endpoint: 127.0.0.1:%d
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, httpPort, grpcPort, c.file)
	file := filepath.Join(dir, "otelcol.yaml")
	os.WriteFile(file, []byte(conf), 0o644)
	startGroup(t, path, "--config", file)
	waitPort(t, httpPort)
	waitPort(t, grpcPort)
	return c
}

// otlpValue is an OTLP JSON AnyValue: one of its fields is set (an int is
// a string, as protobuf's JSON writes 64-bit integers).
type otlpValue map[string]any

type otlpAttrs []struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

// get is the attribute's value as text, "" when it is not there.
func (a otlpAttrs) get(key string) string {
	for _, kv := range a {
		if kv.Key == key {
			for _, v := range kv.Value {
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

// otlpSpan is a span as the file exporter writes it, with its resource's
// attributes.
type otlpSpan struct {
	TraceID    string    `json:"traceId"`
	SpanID     string    `json:"spanId"`
	Parent     string    `json:"parentSpanId"`
	Name       string    `json:"name"`
	Kind       int       `json:"kind"` // 2 server, 3 client
	Attributes otlpAttrs `json:"attributes"`
	resource   otlpAttrs
}

// spans reads back every span the Collector has written so far.
func (c *collector) spans(t *testing.T) []otlpSpan {
	t.Helper()
	f, err := os.Open(c.file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []otlpSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() { // a line per request it received
		var d struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes otlpAttrs `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("the Collector's file: %v", err)
		}
		for _, rs := range d.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					s.resource = rs.Resource.Attributes
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// servers waits until the Collector has written n server spans of the
// service, and returns the spans of their traces.
func (c *collector) servers(t *testing.T, service string, n int) (servers, all []otlpSpan) {
	t.Helper()
	for try := 0; try < 100; try++ {
		all, servers = c.spans(t), nil
		for _, s := range all {
			if s.Kind == 2 && s.resource.get("service.name") == service {
				servers = append(servers, s)
			}
		}
		if len(servers) >= n {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(servers) != n {
		t.Fatalf("the Collector wrote %d server spans of %s, want %d", len(servers), service, n)
	}
	return servers, all
}

// startNginxFPMSessions is startNginxFPM with the sessions in a temporary
// directory where the workers (nobody) can write them.
func startNginxFPMSessions(t *testing.T) *webStack {
	t.Helper()
	dir, err := os.MkdirTemp("", "whyslow-sessions-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	return startNginxFPM(t, filepath.Join(dir, "sessions"))
}

// checkResource: a span's resource is its process's (issue 53, item 1).
func checkResource(t *testing.T, s otlpSpan, service string, pid uint32, host string) {
	t.Helper()
	r := s.resource
	if r.get("service.name") != service || r.get("process.pid") != strconv.Itoa(int(pid)) ||
		r.get("service.instance.id") != fmt.Sprintf("%s/%d", host, pid) || r.get("host.name") != host ||
		r.get("process.executable.name") == "" {
		t.Errorf("span %q's resource %+v, want service %s, pid %d on %s", s.Name, r, service, pid, host)
	}
}

// TestOTLPCollector: nginx in front of PHP-FPM (over HTTP) and PostgreSQL
// (over gRPC), each recorded from its first process, exported to the
// Collector: each request's server span is under its server's service,
// with the semantic conventions' attributes of its protocol and
// connection, as report requests and the clients saw them.
func TestOTLPCollector(t *testing.T) {
	requireRoot(t)
	col := startCollector(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	web := startNginxFPMSessions(t)
	serverPort := web.url[strings.LastIndex(web.url, ":")+1 : strings.LastIndex(web.url, "/")]

	stop := recordRequests(t, "record", "-p", strconv.Itoa(web.nginxPID))
	clientPorts := map[string]bool{}
	for range 3 {
		out, err := exec.Command("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{local_port}", web.url).Output()
		f := strings.Fields(string(out))
		if err != nil || len(f) != 2 || f[0] != "200" {
			t.Fatalf("curl %s: %v %q", web.url, err, out)
		}
		clientPorts[f[1]] = true
	}
	r, text, rec := stop()
	t.Logf("report requests:\n%s", text)
	if r.Count != 3 {
		t.Fatalf("%d requests recorded, want curl's 3", r.Count)
	}
	t.Log(exportOTLP(t, rec, col.otlp))

	servers, all := col.servers(t, "nginx", 3)
	pids := map[string]uint32{}
	for _, q := range r.Requests {
		pids[q.Label] = q.PID
	}
	method, path, _ := strings.Cut(r.Requests[0].Label, " ")
	services := map[string]bool{}
	for _, s := range servers {
		checkResource(t, s, "nginx", r.Requests[0].PID, host)
		a := s.Attributes
		if a.get("http.request.method") != method || a.get("url.path") != path || method != "GET" || path != "/index.php" {
			t.Errorf("server span %q: method %q, path %q; want report requests' %q", s.Name, a.get("http.request.method"), a.get("url.path"), r.Requests[0].Label)
		}
		if a.get("server.address") != host || a.get("server.port") != serverPort || a.get("client.address") != "127.0.0.1" ||
			!clientPorts[a.get("client.port")] || a.get("network.peer.port") != a.get("client.port") || a.get("process.pid") != s.resource.get("process.pid") {
			t.Errorf("server span %q's addresses: server %s:%s, client %s:%s (network.peer.port %s); want %s:%s, 127.0.0.1 and one of curl's ports %v",
				s.Name, a.get("server.address"), a.get("server.port"), a.get("client.address"), a.get("client.port"),
				a.get("network.peer.port"), host, serverPort, clientPorts)
		}
		delete(clientPorts, a.get("client.port")) // each request its own connection
		for _, o := range all {
			if o.TraceID == s.TraceID {
				services[o.resource.get("service.name")] = true
				if o.Kind == 3 && strings.HasPrefix(o.Name, "php-fpm") && o.Parent != s.SpanID {
					t.Errorf("the hop into PHP-FPM %q is not under nginx's span", o.Name)
				}
			}
		}
	}
	if !services["php-fpm8.2"] {
		t.Errorf("the requests' traces cross services %v; want php-fpm8.2's worker among them", services)
	}
	// The worker's spans are under its own resource: php-fpm8.2, its pid.
	for _, o := range all {
		if o.resource.get("service.name") == "php-fpm8.2" {
			pid, _ := strconv.Atoi(o.resource.get("process.pid"))
			checkResource(t, o, "php-fpm8.2", uint32(pid), host)
			if pid == web.nginxPID || pid == 0 {
				t.Errorf("php-fpm8.2's span %q has pid %d", o.Name, pid)
			}
		}
	}

	// PostgreSQL, from the postmaster, over gRPC.
	pg := startPostgres(t)
	create := pg.psql("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0), (2, 0)")
	if out, err := exec.Command(create[0], create[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("psql: %v %s", err, out)
	}
	stopPG := recordServer(t, postmasterPID(t, pg))
	for range 3 {
		psql := pg.psql("SELECT v FROM t WHERE id = 2")
		if out, err := exec.Command(psql[0], psql[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("psql: %v %s", err, out)
		}
	}
	pr, pgRec := stopPG()
	checkLabels(t, pr, map[string]int{"postgres SELECT t": 3})
	t.Log(exportOTLP(t, pgRec, col.grpc, "--protocol", "grpc"))
	pgServers, _ := col.servers(t, "postgres", 3)
	backends := map[uint32]bool{}
	for _, q := range pr.Requests {
		backends[q.PID] = true
	}
	for _, s := range pgServers {
		pid, _ := strconv.Atoi(s.resource.get("process.pid"))
		if !backends[uint32(pid)] {
			t.Errorf("postgres span %q of pid %d; report requests' backends %v", s.Name, pid, backends)
		}
		checkResource(t, s, "postgres", uint32(pid), host)
		a := s.Attributes
		if a.get("db.system.name") != "postgresql" || a.get("db.operation.name") != "SELECT" || a.get("db.collection.name") != "t" ||
			a.get("db.query.summary") != "SELECT t" || a.get("server.address") != host {
			t.Errorf("postgres span %q: %+v", s.Name, a)
		}
		// Over its unix socket: no port, and no HTTP.
		if a.get("server.port") != "" || a.get("client.port") != "" || a.get("http.request.method") != "" {
			t.Errorf("postgres span %q over a unix socket has ports or a method: %+v", s.Name, a)
		}
	}
}
