package otlp

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/output"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func story(t *testing.T, name string) *explain.Source {
	t.Helper()
	for _, s := range storetest.Stories {
		if s.Name == name {
			rec, err := store.Open(s.Record(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rec.Close() })
			return explain.NewSource(rec)
		}
	}
	t.Fatalf("no story %s", name)
	return nil
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return nil
}

// TestRequestTraces: the slow-request story's six requests are six traces;
// POST /vote/linux's server span lasts what report requests says, and its
// fsync on the session file is a child span carrying the blame, linked to
// the blamed process's own span.
func TestRequestTraces(t *testing.T) {
	src := story(t, "slow-request")
	f := source.NoFilter()
	f.Limit = 0
	r, err := requests.Find(src, requests.Options{Filter: f, Explained: 100})
	if err != nil {
		t.Fatal(err)
	}
	output.FillRequestSummaries(r)
	tr := New(RecordingOf(src, "test"))
	for i := range r.Requests {
		tr.AddRequest(&r.Requests[i])
	}
	d := tr.Data()
	for _, rs := range d.ResourceSpans {
		if rs.SchemaUrl != SchemaURL || len(rs.ScopeSpans) == 0 || rs.ScopeSpans[0].SchemaUrl != SchemaURL {
			t.Errorf("schema URLs %q and %v, want %s on each resource's spans and their scope", rs.SchemaUrl, rs.ScopeSpans, SchemaURL)
		}
	}
	// docs/otlp.md says which version the attributes follow.
	if doc, err := os.ReadFile("../../../docs/otlp.md"); err != nil || !strings.Contains(string(doc), SchemaURL) {
		t.Errorf("docs/otlp.md does not give the schema URL %s (%v)", SchemaURL, err)
	}
	spans := d.ResourceSpans[0].ScopeSpans[0].Spans
	byID := map[string]*tracepb.Span{}
	traces := map[string]bool{}
	var servers []*tracepb.Span
	for _, s := range spans {
		byID[string(s.SpanId)] = s
		traces[string(s.TraceId)] = true
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			servers = append(servers, s)
		}
	}
	if len(servers) != 6 || tr.Count() != 6 {
		t.Fatalf("%d server spans, %d traces counted, want the story's 6 requests", len(servers), tr.Count())
	}
	if len(byID) != len(spans) {
		t.Errorf("%d span ids for %d spans: ids repeat", len(byID), len(spans))
	}
	var vote *tracepb.Span
	for i, s := range servers {
		q := r.Requests[i]
		if s.Name != q.Label {
			t.Errorf("server span %q, want the label %q", s.Name, q.Label)
		}
		begin, _ := q.Mono()
		if got := s.StartTimeUnixNano; got != uint64(src.Clock.Wall(begin).UnixNano()) {
			t.Errorf("%s starts at %d, want %d", q.Label, got, src.Clock.Wall(begin).UnixNano())
		}
		if d := float64(s.EndTimeUnixNano-s.StartTimeUnixNano) / 1e9; d != q.DurationS {
			t.Errorf("%s lasts %v s, report requests says %v", q.Label, d, q.DurationS)
		}
		if s.Name == "POST /vote/linux" {
			vote = s
		}
	}
	if vote == nil {
		t.Fatal("no span for POST /vote/linux")
	}
	if m := attr(vote, "http.request.method"); m == nil || m.GetStringValue() != "POST" {
		t.Errorf("http.request.method %v", m)
	}
	if p := attr(vote, "url.path"); p == nil || p.GetStringValue() != "/vote/linux" {
		t.Errorf("url.path %v", p)
	}
	// The story's client is 10.0.0.7 on a port of its own, its server 10.0.0.2:8080.
	for _, k := range []string{"network.peer.address", "client.address"} {
		if a := attr(vote, k); a == nil || a.GetStringValue() != "10.0.0.7" {
			t.Errorf("%s %v", k, a)
		}
	}
	if p, c := attr(vote, "server.port"), attr(vote, "client.port"); p.GetIntValue() != 8080 || c.GetIntValue() < 41000 || c.GetIntValue() > 41000+0xffff {
		t.Errorf("server.port %v, client.port %v", p, c)
	}
	if s := attr(vote, "whyslow.trace_id.source"); s == nil || s.GetStringValue() != "whyslow" {
		t.Errorf("whyslow.trace_id.source %v", s)
	}
	var fsync *tracepb.Span
	var children int
	for _, s := range spans {
		if bytes.Equal(s.ParentSpanId, vote.SpanId) {
			children++
			if strings.HasPrefix(s.Name, "sync on /srv/sessions/sess_42") {
				fsync = s
			}
		}
		if p := byID[string(s.ParentSpanId)]; p != nil && (s.StartTimeUnixNano < p.StartTimeUnixNano || s.EndTimeUnixNano > p.EndTimeUnixNano) && p.Kind == tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("span %q outside its request %q", s.Name, p.Name)
		}
	}
	if fsync == nil {
		t.Fatalf("no span for the fsync on the session file among %d children of POST /vote/linux", children)
	}
	if b := attr(fsync, "whyslow.blame.comm"); b == nil || b.GetStringValue() != "sync" {
		t.Errorf("the fsync's blame %v, want sync", b)
	}
	if b := attr(fsync, "whyslow.blame"); b == nil || !strings.Contains(b.GetStringValue(), "sync (pid 4100)") {
		t.Errorf("whyslow.blame %v, want the sentence naming sync (pid 4100)", b)
	}
	if share := attr(fsync, "whyslow.share").GetDoubleValue(); share < 0.9 || share > 1 {
		t.Errorf("the fsync's share %v, want most of the request", share)
	}
	if len(fsync.Links) != 1 {
		t.Fatalf("fsync links %v, want one to the blamed sync", fsync.Links)
	}
	blamed := byID[string(fsync.Links[0].SpanId)]
	if blamed == nil || !bytes.Equal(blamed.TraceId, fsync.Links[0].TraceId) || attr(blamed, "process.pid").GetIntValue() != 4100 {
		t.Errorf("the link leads to %v, want the span of sync (pid 4100)", blamed)
	}
	if len(traces) != 6+len(tr.blamedOrder) {
		t.Errorf("%d trace ids, want 6 requests' and %d blamed processes'", len(traces), len(tr.blamedOrder))
	}
	// The same recording exported again gives the same ids.
	again := New(RecordingOf(src, "test"))
	again.AddRequest(&r.Requests[0])
	if !bytes.Equal(again.spans[0].TraceId, spans[0].TraceId) || !bytes.Equal(again.spans[0].SpanId, spans[0].SpanId) {
		t.Error("ids differ between two exports of one recording")
	}
}

// TestJoinsTraceParent: a request that carried a traceparent is in that
// trace, its server span the child of the header's span, flagged remote.
func TestJoinsTraceParent(t *testing.T) {
	src := story(t, "slow-request")
	f := source.NoFilter()
	f.Limit = 1
	r, err := requests.Find(src, requests.Options{Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	q := r.Requests[0]
	q.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tr := New(RecordingOf(src, "test"))
	tr.AddRequest(&q)
	for i, s := range tr.spans {
		if got := hexOf(s.TraceId); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Fatalf("span %q in trace %s, want the traceparent's", s.Name, got)
		}
		if i == 0 {
			if hexOf(s.ParentSpanId) != "00f067aa0ba902b7" || s.Flags&isRemote == 0 || s.Flags&0xff != 1 {
				t.Errorf("server span parent %x flags %#x, want 00f067aa0ba902b7, remote, sampled", s.ParentSpanId, s.Flags)
			}
			if attr(s, "whyslow.trace_id.source").GetStringValue() != "traceparent" {
				t.Error("the server span does not say its trace id came from the traceparent")
			}
		}
	}
}

// TestPathTrace: a recording without requests is its target's critical
// path, one trace: the segments add up to the target's time.
func TestPathTrace(t *testing.T) {
	src := story(t, "lock-held")
	x, err := explain.Explain(src, 2000)
	if err != nil {
		t.Fatal(err)
	}
	output.FillSummaries(x)
	tr := New(RecordingOf(src, "test"))
	tr.AddPath(x)
	spans := tr.Data().ResourceSpans[0].ScopeSpans[0].Spans
	root := spans[0]
	if tr.Count() != 1 || root.ParentSpanId != nil {
		t.Fatalf("%d traces, root %v", tr.Count(), root)
	}
	var segs uint64
	for _, s := range spans {
		if attr(s, "thread.id") != nil {
			segs += s.EndTimeUnixNano - s.StartTimeUnixNano
		}
	}
	if whole := root.EndTimeUnixNano - root.StartTimeUnixNano; segs < whole-1000 || segs > whole+1000 {
		t.Errorf("segments add up to %d ns, the target's span %d", segs, whole)
	}
	if attr(root, "whyslow.reason").GetStringValue() != x.Verdict.Reason {
		t.Errorf("root reason %v, verdict %s", attr(root, "whyslow.reason"), x.Verdict.Reason)
	}
}
