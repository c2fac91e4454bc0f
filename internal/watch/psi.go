package watch

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"
)

// pressure follows PSI rules: each second it reads the kernel's stall
// totals (/proc/pressure/*, microseconds since boot) and fires a rule when,
// over its duration, the share of time stalled went above its share. The
// totals, not the kernel's avg10/avg60: a rule's duration is the user's.
type pressure struct {
	fs      procfs.FS
	rules   []PSIRule
	history map[string][]psiSample // per resource and kind, one a second
	firing  map[int]bool           // per rule: above its share now (fires on the way up)
}

type psiSample struct {
	at      time.Time
	totalUS uint64
}

func newPressure(fs procfs.FS, rules []PSIRule) *pressure {
	return &pressure{fs: fs, rules: rules, history: map[string][]psiSample{}, firing: map[int]bool{}}
}

// poll reads the totals and returns the rules that fired.
func (p *pressure) poll(now time.Time, mono uint64) []*Trigger {
	var out []*Trigger
	read := map[string]procfs.PSIStats{}
	for i, r := range p.rules {
		st, ok := read[r.Resource]
		if !ok {
			var err error
			if st, err = p.fs.PSIStatsForResource(r.Resource); err != nil {
				continue // no PSI (CONFIG_PSI off, psi=0): `whyslow watch` said so at start
			}
			read[r.Resource] = st
		}
		line := st.Some
		if r.Full {
			line = st.Full
		}
		if line == nil {
			continue
		}
		key := r.String()
		h := append(p.history[key], psiSample{at: now, totalUS: line.Total})
		// Keep one sample older than the rule's duration: the far end.
		for len(h) > 2 && now.Sub(h[1].at) >= r.Over {
			h = h[1:]
		}
		p.history[key] = h
		first := h[0]
		span := now.Sub(first.at)
		if span < r.Over || line.Total < first.totalUS {
			continue
		}
		share := float64(line.Total-first.totalUS) / float64(span.Microseconds())
		above := share > r.Share
		if above && !p.firing[i] {
			out = append(out, &Trigger{Kind: r.Kind(), At: mono - uint64(span.Nanoseconds()),
				Detail: fmt.Sprintf("%s: %.0f%% over %s", r, share*100, span.Round(time.Second))})
		}
		p.firing[i] = above
	}
	return out
}
