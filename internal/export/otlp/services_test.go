package otlp

import (
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestServicesOf: each process's service is the name it gave itself, else
// its system service's, else its executable's; a child forked without an
// exec is its parent's; a process seen only through its waits is named.
func TestServicesOf(t *testing.T) {
	r := storetest.New(t, "services", nil)
	id := "4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0"
	shop := storetest.Thread{PID: 10, TID: 10, Comm: "python3"}
	web := storetest.Thread{PID: 20, TID: 20, Comm: "nginx"}
	worker := storetest.Thread{PID: 21, TID: 21, Comm: "nginx"}
	db := storetest.Thread{PID: 30, TID: 30, Comm: "postgres"}
	cache := storetest.Thread{PID: 40, TID: 40, Comm: "redis-server"}
	boxed := storetest.Thread{PID: 50, TID: 50, Comm: "app"}
	r.Add(
		&event.Exec{Header: shop.At(1), Filename: "/usr/bin/python3", Cgroup: "/system.slice/shop.service", Service: "checkout"},
		&event.Exec{Header: web.At(2), Filename: "/usr/sbin/nginx", Cgroup: "/system.slice/nginx.service"},
		&event.Fork{Header: web.At(3), ChildPID: 21, ChildTID: 21},
		&event.Existing{Header: db.At(0), State: 'S', Args: []string{"postgres"}, Cgroup: "/user.slice/user-0.slice/session-1.scope"},
		&event.Exec{Header: boxed.At(4), Filename: "/app/bin/app", Cgroup: "/system.slice/docker-" + id + ".scope"},
	)
	r.Add(r.Off(cache, 5, 6, event.ReasonSleep, "epoll_wait", storetest.Thread{}, 0))
	r.Add(r.Off(worker, 5, 6, event.ReasonSleep, "epoll_wait", storetest.Thread{}, 0))
	rec, err := store.Open(r.Close())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	got, err := ServicesOf(explain.NewSource(rec), []uint32{10, 20, 21, 30, 40, 50, 99})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32]Service{
		10: {Name: "checkout", Source: "environment", Executable: "python3"},
		20: {Name: "nginx", Source: "unit", Executable: "nginx"},
		21: {Name: "nginx", Source: "unit", Executable: "nginx"},
		30: {Name: "postgres", Source: "executable", Executable: "postgres"},
		40: {Name: "redis-server", Source: "executable", Executable: "redis-server"},
		50: {Name: "app", Source: "executable", Executable: "app", Container: id},
		99: {Name: "unknown", Source: "executable"},
	}
	for pid, w := range want {
		if got[pid] != w {
			t.Errorf("pid %d: %+v, want %+v", pid, got[pid], w)
		}
	}
}

// TestSpansUnderTheirService: a span goes under its process's resource (a
// span with no process.pid under its parent's), one resource per process,
// whyslow the scope of each; spans of no known process stay whyslow's.
func TestSpansUnderTheirService(t *testing.T) {
	tr := New(Recording{Host: "h", Version: "v"})
	b := &builder{t: tr, trace: []byte("0123456789abcdef"), seed: []byte("s")}
	srv := b.add(nil, "GET /", tracepb.Span_SPAN_KIND_SERVER, 1, 9, []*commonpb.KeyValue{i64("process.pid", 20)})
	b.add(srv.SpanId, "queued", tracepb.Span_SPAN_KIND_INTERNAL, 1, 2, nil)
	b.add(srv.SpanId, "php-fpm (pid 30)", tracepb.Span_SPAN_KIND_INTERNAL, 2, 8, []*commonpb.KeyValue{i64("process.pid", 30)})
	b.add(nil, "lost", tracepb.Span_SPAN_KIND_INTERNAL, 2, 8, []*commonpb.KeyValue{i64("process.pid", 77)})
	tr.SetServices(map[uint32]Service{20: {Name: "nginx", Source: "unit", Executable: "nginx"},
		30: {Name: "php-fpm8.2", Source: "executable", Executable: "php-fpm8.2", Container: "c1"}})
	d := tr.Data()
	names := map[string][]string{}
	for _, rs := range d.ResourceSpans {
		var service string
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" {
				service = a.Value.GetStringValue()
			}
		}
		if len(rs.ScopeSpans) != 1 || rs.ScopeSpans[0].Scope.Name != "github.com/whyslow/whyslow" {
			t.Errorf("service %s: scope %v", service, rs.ScopeSpans)
		}
		for _, s := range rs.ScopeSpans[0].Spans {
			names[service] = append(names[service], s.Name)
		}
	}
	if len(d.ResourceSpans) != 3 || len(names["nginx"]) != 2 || names["php-fpm8.2"][0] != "php-fpm (pid 30)" || names["whyslow"][0] != "lost" {
		t.Errorf("spans by service: %v", names)
	}
	var container string
	for _, a := range d.ResourceSpans[1].Resource.Attributes {
		if a.Key == "container.id" {
			container = a.Value.GetStringValue()
		}
	}
	if container != "c1" {
		t.Errorf("php-fpm's resource: %v", d.ResourceSpans[1].Resource.Attributes)
	}
}

// TestProtocolAttrs: a request's semantic-convention attributes come from
// the protocol that framed it, not from how its label looks: a MySQL
// statement gets db.* attributes, a FastCGI request http.* ones, and a
// label that merely looks like HTTP from an unknown protocol gets none.
func TestProtocolAttrs(t *testing.T) {
	for _, c := range []struct {
		protocol, label string
		want            map[string]string
	}{
		{"http", "GET /index.php", map[string]string{"http.request.method": "GET", "url.path": "/index.php"}},
		{"fastcgi", "POST /vote/linux", map[string]string{"http.request.method": "POST", "url.path": "/vote/linux"}},
		{"postgres", "postgres SELECT users", map[string]string{"db.system.name": "postgresql", "db.operation.name": "SELECT",
			"db.collection.name": "users", "db.query.summary": "SELECT users"}},
		{"mysql", "mysql UPDATE t", map[string]string{"db.system.name": "mysql", "db.operation.name": "UPDATE",
			"db.collection.name": "t", "db.query.summary": "UPDATE t"}},
		{"postgres", "postgres BEGIN", map[string]string{"db.system.name": "postgresql", "db.operation.name": "BEGIN"}},
		{"redis", "redis GET", map[string]string{"db.system.name": "redis", "db.operation.name": "GET"}},
		{"", "GET /looks/like/http", map[string]string{}},
		{"http", "(no request line)", map[string]string{}},
	} {
		got := map[string]string{}
		for _, a := range protocolAttrs(c.protocol, c.label) {
			got[a.Key] = a.Value.GetStringValue()
		}
		if len(got) != len(c.want) {
			t.Errorf("%s %q: %v, want %v", c.protocol, c.label, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s %q: %s = %q, want %q", c.protocol, c.label, k, got[k], v)
			}
		}
	}
}

// TestShortSegmentsFold: a 0.4 s request whose handler slept is its sleep,
// and the CPU and run-queue slivers around it folded into one span that
// keeps each reason's time, not eleven spans of µs; a short segment that
// names what it waited on stays a span of its own.
func TestShortSegmentsFold(t *testing.T) {
	var segs []explain.PathSegment
	at := 0.0
	add := func(reason string, d float64, object string) {
		segs = append(segs, explain.PathSegment{PID: 5, TID: 5, Comm: "app", Reason: reason, BeginS: at, DurS: d, Object: object})
		at += d
	}
	for i := 0; i < 5; i++ {
		add("cpu", 0.000300, "")
		add("runqueue", 0.000020, "")
	}
	add("sleep", 0.4, "")
	add("cpu", 0.000322, "")
	add("ipc", 0.000100, "pipe:[42]")
	tr := New(Recording{Host: "h", Version: "v"})
	b := &builder{t: tr, trace: []byte("0123456789abcdef"), seed: []byte("s")}
	end := uint64(at * 1e9)
	root := b.add(nil, "GET /", tracepb.Span_SPAN_KIND_SERVER, 0, end, nil)
	b.path(explain.CriticalPath{Segments: segs}, 0, end, root, nil, map[uint32]*tracepb.Span{5: root}, verdict{reason: "sleep"})
	var names []string
	var folded *tracepb.Span
	for _, s := range tr.spans[1:] {
		names = append(names, s.Name)
		if strings.HasSuffix(s.Name, "(10 segments)") {
			folded = s
		}
	}
	if len(names) != 4 || folded == nil || names[1] != "sleep" || names[3] != "ipc on pipe:[42]" {
		t.Fatalf("spans %q, want the 10 slivers folded, the sleep, the last cpu, the ipc", names)
	}
	if got := attr(folded, "whyslow.folded.cpu_s").GetDoubleValue(); got < 0.0014999 || got > 0.0015001 {
		t.Errorf("folded cpu %v s, want 0.0015", got)
	}
	if got := attr(folded, "whyslow.folded.runqueue_s").GetDoubleValue(); got < 0.0000999 || got > 0.0001001 {
		t.Errorf("folded runqueue %v s, want 0.0001", got)
	}
	if folded.Name != "cpu, runqueue (10 segments)" || attr(folded, "whyslow.reason").GetStringValue() != "cpu" {
		t.Errorf("folded span %q, reason %v", folded.Name, attr(folded, "whyslow.reason"))
	}
}
