package otlp

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/event"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// verdict is what a trace's top span concluded: the segments of its reason
// carry its blame.
type verdict struct {
	reason string
	blame  *explain.Blame
}

func (v verdict) explains(reason string) bool {
	return v.blame != nil && (reason == v.reason || event.Reason(v.reason).Disk() && event.Reason(reason).Disk())
}

// path adds a span per segment of p (BeginS counted from base), under the
// span of the process that spent it: parents' (the root's, the upstream's
// hop), or one made here for each other process the path went through,
// nested in the hop when it lies inside it (the upstream's own database).
func (b *builder) path(p explain.CriticalPath, base, end uint64, root, hop *tracepb.Span, parents map[uint32]*tracepb.Span, v verdict) {
	total := max(float64(end-base)/1e9, 1e-9)
	type extent struct {
		a, z uint64
		comm string
	}
	others := map[uint32]*extent{}
	var order []uint32
	for _, s := range p.Segments {
		if parents[s.PID] != nil {
			continue
		}
		a := base + ns(s.BeginS)
		z := a + ns(s.DurS)
		if e := others[s.PID]; e != nil {
			e.a, e.z = min(e.a, a), max(e.z, z)
			continue
		}
		others[s.PID] = &extent{a: a, z: z, comm: s.Comm}
		order = append(order, s.PID)
	}
	for _, pid := range order {
		e := others[pid]
		parent := root
		if hop != nil && b.t.wall(e.a) >= hop.StartTimeUnixNano && b.t.wall(e.z) <= hop.EndTimeUnixNano {
			parent = hop
		}
		parents[pid] = b.add(parent.SpanId, fmt.Sprintf("%s (pid %d)", e.comm, pid), tracepb.Span_SPAN_KIND_INTERNAL, e.a, e.z,
			[]*commonpb.KeyValue{i64("process.pid", int64(pid)), str("process.executable.name", e.comm)})
	}
	for _, run := range foldable(p.Segments, total, v) {
		s := run[0]
		a := base + ns(s.BeginS)
		if len(run) > 1 {
			last := run[len(run)-1]
			b.add(parents[s.PID].SpanId, foldedName(run), tracepb.Span_SPAN_KIND_INTERNAL, a, base+ns(last.BeginS+last.DurS), foldedAttrs(run, total))
			continue
		}
		sp := b.add(parents[s.PID].SpanId, segmentName(s), tracepb.Span_SPAN_KIND_INTERNAL, a, a+ns(s.DurS), segmentAttrs(s, total))
		if v.explains(s.Reason) {
			sp.Attributes = append(sp.Attributes, blameAttrs(v.blame)...)
			sp.Links = append(sp.Links, b.t.blame(*v.blame, a, a+ns(s.DurS)))
		}
	}
}

// foldShare is the part of a request under which a segment is folded with
// its neighbours: a 0.4 s request whose handler slept is its sleep and one
// span of the CPU around it, not eleven cpu and runqueue spans of 1-322 µs.
const (
	foldShare = 0.01
	foldMost  = 0.001 // seconds: a segment this long is never folded
)

// foldable groups the path's segments into spans: neighbouring segments
// of one thread, each shorter than 1% of the request and than 1 ms, and
// none the verdict's blamed reason nor naming what it waited on, fold into
// one span; every other segment is a span of its own. A trace so keeps
// every segment that its verdict rests on.
func foldable(segs []explain.PathSegment, total float64, v verdict) [][]explain.PathSegment {
	small := func(s explain.PathSegment) bool {
		return s.DurS < foldShare*total && s.DurS < foldMost && !v.explains(s.Reason) && s.Object == "" && s.BlockedByPID == 0
	}
	var out [][]explain.PathSegment
	for i := 0; i < len(segs); {
		j := i + 1
		if small(segs[i]) {
			for j < len(segs) && small(segs[j]) && segs[j].TID == segs[i].TID {
				j++
			}
		}
		out = append(out, segs[i:j])
		i = j
	}
	return out
}

// foldedReasons are folded segments' reasons, the longest first, their
// seconds each, and all of them.
func foldedReasons(run []explain.PathSegment) (order []string, by map[string]float64, sum float64) {
	by = map[string]float64{}
	for _, s := range run {
		if _, ok := by[s.Reason]; !ok {
			order = append(order, s.Reason)
		}
		by[s.Reason] += s.DurS
		sum += s.DurS
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(by[b], by[a]) })
	return order, by, sum
}

// foldedName names folded segments by their reasons, the longest first:
// "cpu, runqueue (5 segments)".
func foldedName(run []explain.PathSegment) string {
	order, _, _ := foldedReasons(run)
	return fmt.Sprintf("%s (%d segments)", strings.Join(order, ", "), len(run))
}

// foldedAttrs keep each reason's time of folded segments: whyslow.reason
// the longest's, whyslow.folded.REASON_s each one's seconds.
func foldedAttrs(run []explain.PathSegment, total float64) []*commonpb.KeyValue {
	order, by, sum := foldedReasons(run)
	s := run[0]
	a := []*commonpb.KeyValue{str("whyslow.reason", order[0]), f64("whyslow.share", sum/total),
		i64("process.pid", int64(s.PID)), i64("thread.id", int64(s.TID)), str("thread.name", s.Comm),
		i64("whyslow.folded", int64(len(run)))}
	for _, r := range order {
		a = append(a, f64("whyslow.folded."+r+"_s", by[r]))
	}
	return a
}

// segmentName says what a segment of the path waited on: "disk-write on
// FILE", "lock held by postgres (pid 4242)", "network wait on PEER".
func segmentName(s explain.PathSegment) string {
	r := event.Reason(s.Reason)
	switch {
	case r == event.ReasonLock && s.BlockedByPID != 0:
		return fmt.Sprintf("lock held by %s (pid %d)", s.BlockedByComm, s.BlockedByPID)
	case r == event.ReasonNetwork && s.Object != "":
		return "network wait on " + s.Object
	case s.BlockedByPID != 0:
		return fmt.Sprintf("%s on %s (pid %d)", s.Reason, s.BlockedByComm, s.BlockedByPID)
	case s.Object != "":
		return s.Reason + " on " + s.Object
	}
	return s.Reason
}

func segmentAttrs(s explain.PathSegment, total float64) []*commonpb.KeyValue {
	a := []*commonpb.KeyValue{str("whyslow.reason", s.Reason), f64("whyslow.share", s.DurS/total),
		i64("process.pid", int64(s.PID)), i64("thread.id", int64(s.TID)), str("thread.name", s.Comm)}
	if s.Object != "" {
		switch r := event.Reason(s.Reason); {
		case r.Disk():
			a = append(a, str("whyslow.file", s.Object))
		case r == event.ReasonNetwork:
			a = append(a, str("network.peer.address", s.Object))
		default:
			a = append(a, str("whyslow.object", s.Object))
		}
	}
	if s.BlockedByPID != 0 {
		a = append(a, i64("whyslow.blocked_by.pid", int64(s.BlockedByPID)), str("whyslow.blocked_by.comm", s.BlockedByComm))
	}
	if s.OwnReason != "" {
		a = append(a, str("whyslow.own_reason", s.OwnReason))
	}
	if s.Role != "" {
		a = append(a, str("whyslow.role", s.Role))
	}
	return a
}
