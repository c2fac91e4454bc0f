package exporter

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/live"
)

// Grouped by command name, 10,000 processes with names never seen before
// (one frame each, then gone) leave the exporter with its bounded label set:
// the groups that have their own label, "other", and a bounded table of
// recent activity.
func TestChurnKeepsLabelsBounded(t *testing.T) {
	c := New(Options{GroupBy: ByComm, Groups: 20, Devices: 16})
	for i := range 10_000 {
		p := &live.Proc{PID: uint32(i + 100), Comm: fmt.Sprintf("churn-%d", i),
			Times: live.Times{CPU: uint64(1+i%7) * 1e6, Wait: map[event.Reason]uint64{event.ReasonRunqueue: 1e6}}}
		c.Add(&live.Frame{Start: uint64(i) * 1e9, End: uint64(i+1) * 1e9, Procs: map[uint32]*live.Proc{p.PID: p}})
	}
	if len(c.byGroup) > 21 || len(c.groups.labeled) > 20 {
		t.Errorf("%d groups counted, %d labelled; want at most 20 and other", len(c.byGroup), len(c.groups.labeled))
	}
	if len(c.groups.score) > c.groups.maxTracked {
		t.Errorf("%d names tracked, bound %d", len(c.groups.score), c.groups.maxTracked)
	}
	ch := make(chan prometheus.Metric, 10_000)
	c.Collect(ch)
	if len(ch) > 21*15+40 {
		t.Errorf("%d series served", len(ch))
	}
}
