// Package otlp maps what whyslow explains to OpenTelemetry traces: each
// request of a recording one trace, its spans the request's critical path,
// named and attributed with why the time went (docs/otlp.md): traces.go
// the traces, path.go the critical path's spans, blame.go the blamed
// processes; send.go and send_grpc.go deliver them over OTLP/HTTP and gRPC.
package otlp

import (
	"fmt"
	"math"
	"slices"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/analysis/source"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Recording is what every span of an export shares: the machine, the clock
// that turns the recording's times into wall-clock times, and the seed of
// its ids.
type Recording struct {
	Host    string
	Clock   source.Clock
	Version string // whyslow's
	seed    string
}

// RecordingOf is the recording s reads, exported by whyslow version.
func RecordingOf(s *explain.Source, version string) Recording {
	return Recording{Host: s.Meta["host"], Clock: s.Clock, Version: version,
		seed: s.Meta["host"] + "/" + s.Meta["start_mono"] + "/" + s.Meta["clock_offset_ns"]}
}

// W3C trace flags and OTLP's span flags.
const (
	sampled     = 0x01
	hasIsRemote = uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	isRemote    = uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
)

// Traces gathers the traces of one export: a resource for each process
// that spent its spans (its service: services.go), whyslow the
// instrumentation scope.
type Traces struct {
	rec         Recording
	ids         ids
	spans       []*tracepb.Span
	traces      int
	blamed      map[uint32]*blamedProcess
	blamedOrder []uint32
	services    map[uint32]Service // by pid: the resource of the spans it spent (SetServices)
}

func New(rec Recording) *Traces {
	return &Traces{rec: rec, ids: ids{seed: rec.seed}, blamed: map[uint32]*blamedProcess{}}
}

// Spans and Count are how many spans and traces it holds (the blamed
// processes' traces come with Data).
func (t *Traces) Spans() int { return len(t.spans) }
func (t *Traces) Count() int { return t.traces }

// wall converts a time of the recording (CLOCK_MONOTONIC ns) to Unix ns,
// with the offset measured once when the recording began.
func (t *Traces) wall(mono uint64) uint64 { return uint64(int64(mono) + t.rec.Clock.OffsetNS) }

// AddRequest adds a request's trace: its server span, what it queued, the
// hop into its upstream, and its critical path's segments under the
// process that spent them. Its blame's Summary should be filled
// (output.FillRequestSummaries).
func (t *Traces) AddRequest(r *requests.Entry) {
	begin, end := r.Mono()
	own := t.ids.trace("request", begin, uint64(r.PID), uint64(r.TID))
	b := &builder{t: t, trace: own, seed: own, flags: sampled | hasIsRemote}
	var parentID []byte
	source := "whyslow"
	srvFlags := b.flags
	if p, ok := parseTraceParent(r.TraceParent); ok {
		b.trace, parentID, source = p.trace, p.span, "traceparent"
		b.flags = p.flags&0xff | hasIsRemote
		srvFlags = b.flags | isRemote
	}
	attrs := append(requestAttrs(r, t.rec.Host),
		str("whyslow.trace_id.source", source),
		str("whyslow.reason", r.Verdict.Reason),
		f64("whyslow.share", r.Verdict.Share),
		str("whyslow.verdict", r.Verdict.Summary))
	if r.Approximate {
		attrs = append(attrs, boolean("whyslow.approximate", true))
	}
	if r.ClientWaitS > 0 {
		attrs = append(attrs, f64("whyslow.client_wait_s", r.ClientWaitS))
	}
	attrs = append(attrs, blameAttrs(r.Verdict.Blame)...)
	srv := b.add(parentID, r.Label, tracepb.Span_SPAN_KIND_SERVER, begin, end, attrs)
	srv.Flags = srvFlags
	for _, bl := range r.Blame {
		srv.Links = append(srv.Links, t.blame(bl, begin, end))
	}
	total := float64(end-begin) / 1e9
	if r.QueuedS > 0 {
		b.add(srv.SpanId, "queued", tracepb.Span_SPAN_KIND_INTERNAL, begin, begin+ns(r.QueuedS), []*commonpb.KeyValue{
			str("whyslow.reason", "queued"), f64("whyslow.share", r.QueuedS/total)})
	}
	parents := map[uint32]*tracepb.Span{r.PID: srv}
	var hop *tracepb.Span
	if u := r.Upstream; u != nil {
		first, last := u.Mono()
		name := "upstream " + u.Peer
		hattrs := append(serverAddrs(u.Peer), f64("whyslow.share", u.DurationS/total))
		if u.PID != 0 {
			name = fmt.Sprintf("%s (pid %d)", u.Comm, u.PID)
			hattrs = append(hattrs, i64("process.pid", int64(u.PID)), str("process.executable.name", u.Comm))
		}
		hop = b.add(srv.SpanId, name, tracepb.Span_SPAN_KIND_CLIENT, first, last, hattrs)
		if u.PID != 0 {
			parents[u.PID] = hop
		}
	}
	b.path(r.Path(), begin, end, srv, hop, parents, verdict{reason: r.Verdict.Reason, blame: r.Verdict.Blame})
	t.traces++
}

// AddPath adds the trace of a target's critical path, for a recording
// without requests: the target's span, and the path's segments under the
// process that spent them. Summaries should be filled (output.FillSummaries).
func (t *Traces) AddPath(x *explain.Explanation) {
	begin, end := x.Mono()
	own := t.ids.trace("target", begin, uint64(x.Target.PID))
	b := &builder{t: t, trace: own, seed: own, flags: sampled | hasIsRemote}
	name := x.Target.Command
	if len(name) > 80 {
		name = name[:77] + "..."
	}
	var vb *explain.Blame
	if x.Verdict.Detail != nil {
		vb = x.Verdict.Detail.Blame
	}
	attrs := []*commonpb.KeyValue{
		i64("process.pid", int64(x.Target.PID)), str("process.command_line", x.Target.Command),
		str("whyslow.trace_id.source", "whyslow"),
		str("whyslow.reason", x.Verdict.Reason), f64("whyslow.share", x.Verdict.Share),
		str("whyslow.verdict", x.Verdict.Summary)}
	if x.Target.ExitCode != nil {
		attrs = append(attrs, i64("process.exit.code", int64(*x.Target.ExitCode)))
	}
	attrs = append(attrs, blameAttrs(vb)...)
	root := b.add(nil, name, tracepb.Span_SPAN_KIND_INTERNAL, begin, end, attrs)
	for _, bl := range x.Blame {
		root.Links = append(root.Links, t.blame(bl, begin, end))
	}
	b.path(x.Path, begin, end, root, nil, map[uint32]*tracepb.Span{x.Target.PID: root}, verdict{reason: x.Verdict.Reason, blame: vb})
	t.traces++
}

// builder makes the spans of one trace.
type builder struct {
	t     *Traces
	trace []byte
	seed  []byte // span ids derive from it: the request's own, even in a joined trace
	flags uint32
	n     int
}

func (b *builder) add(parentID []byte, name string, kind tracepb.Span_SpanKind, begin, end uint64, attrs []*commonpb.KeyValue) *tracepb.Span {
	s := &tracepb.Span{TraceId: b.trace, SpanId: span(b.seed, b.n), ParentSpanId: parentID, Name: name, Kind: kind,
		StartTimeUnixNano: b.t.wall(begin), EndTimeUnixNano: b.t.wall(max(begin, end)), Attributes: attrs, Flags: b.flags}
	b.n++
	b.t.spans = append(b.t.spans, s)
	return s
}

// Data is the export as OTLP's TracesData (on the wire the same as an
// ExportTraceServiceRequest), the blamed processes' spans last.
func (t *Traces) Data() *tracepb.TracesData {
	return t.wrap(append(slices.Clip(t.spans), t.blamedSpans()...))
}

func (t *Traces) wrap(spans []*tracepb.Span) *tracepb.TracesData {
	return &tracepb.TracesData{ResourceSpans: t.byProcess(spans)}
}

// ns is seconds as nanoseconds: exact for the path's segments, whose
// seconds were nanoseconds divided once.
func ns(s float64) uint64 { return uint64(math.Round(max(s, 0) * 1e9)) }
