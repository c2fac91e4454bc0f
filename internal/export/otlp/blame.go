package otlp

import (
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// blamedProcess is a process blamed in the export: a trace of its own, one
// span over the time of the requests it held up, that their spans link to.
type blamedProcess struct {
	b           explain.Blame
	begin, end  uint64
	trace, span []byte
	times       int
}

func (t *Traces) blame(b explain.Blame, begin, end uint64) *tracepb.Span_Link {
	p := t.blamed[b.PID]
	if p == nil {
		trace := t.ids.trace("blamed", uint64(b.PID))
		p = &blamedProcess{b: b, begin: begin, end: end, trace: trace, span: span(trace, 0)}
		t.blamed[b.PID] = p
		t.blamedOrder = append(t.blamedOrder, b.PID)
	}
	p.begin, p.end = min(p.begin, begin), max(p.end, end)
	p.times++
	return &tracepb.Span_Link{TraceId: p.trace, SpanId: p.span, Flags: sampled | hasIsRemote,
		Attributes: []*commonpb.KeyValue{str("whyslow.blame.activity", string(b.Activity)), f64("whyslow.blame.share", b.Share)}}
}

// blamedSpans are the blamed processes' spans, each its trace's one.
func (t *Traces) blamedSpans() []*tracepb.Span {
	var out []*tracepb.Span
	for _, pid := range t.blamedOrder {
		p := t.blamed[pid]
		out = append(out, &tracepb.Span{TraceId: p.trace, SpanId: p.span, Name: fmt.Sprintf("%s (pid %d)", p.b.Comm, pid),
			Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: t.wall(p.begin), EndTimeUnixNano: t.wall(p.end),
			Flags: sampled | hasIsRemote, Attributes: []*commonpb.KeyValue{
				i64("process.pid", int64(pid)), str("process.executable.name", p.b.Comm),
				str("whyslow.blame.activity", string(p.b.Activity)), i64("whyslow.blamed_spans", int64(p.times))}})
	}
	return out
}

// blameAttrs are the whyslow.blame attributes of the verdict's blame.
func blameAttrs(b *explain.Blame) []*commonpb.KeyValue {
	if b == nil {
		return nil
	}
	sum := b.Summary
	if sum == "" {
		sum = fmt.Sprintf("%s (pid %d) %s", b.Comm, b.PID, b.Activity)
	}
	a := []*commonpb.KeyValue{str("whyslow.blame", sum), i64("whyslow.blame.pid", int64(b.PID)),
		str("whyslow.blame.comm", b.Comm), str("whyslow.blame.activity", string(b.Activity)), f64("whyslow.blame.share", b.Share)}
	if b.Syscall != "" {
		a = append(a, str("whyslow.blame.syscall", b.Syscall))
	}
	if b.Path != "" {
		a = append(a, str("whyslow.blame.file", b.Path))
	}
	return a
}
