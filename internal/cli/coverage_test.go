package cli

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// Every answer accounts for the time asked about (issue 49): in each
// golden story, the explanation's critical path adds up to its wall time
// within 1% with no unaccounted CPU, and each request's reasons add up to
// its duration.
func TestStoriesCoverTheirTime(t *testing.T) {
	for _, story := range storetest.Stories {
		t.Run(story.Name, func(t *testing.T) {
			rec := story.Record(t)
			out, err := runReport(t, rec, "explain", rec, "--json")
			if err != nil {
				t.Fatal(err)
			}
			var x explain.Explanation
			if err := json.Unmarshal([]byte(out), &x); err != nil {
				t.Fatal(err)
			}
			if !x.Coverage.Covered() || x.Coverage.WallS != x.WallS {
				t.Errorf("coverage %+v of wall %.3f s: the path must add up to the wall time, all of it accounted for", x.Coverage, x.WallS)
			}
			var ranked float64
			for _, r := range x.Verdict.Ranked {
				ranked += r.S
			}
			if x.Verdict.Basis == "critical_path" && math.Abs(ranked-x.WallS) > 0.01*x.WallS {
				t.Errorf("the verdict ranks %.3f s of %.3f s: its shares must be of the wall time", ranked, x.WallS)
			}
			if story.Name != "slow-request" {
				return // recorded without --requests
			}
			out, err = runReport(t, rec, "requests", rec, "--json")
			if err != nil {
				t.Fatal(err)
			}
			var r requests.Requests
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			for _, e := range r.Requests {
				var sum float64
				for _, v := range e.ByReason {
					sum += v
				}
				if math.Abs(sum-e.DurationS) > 0.01*e.DurationS {
					t.Errorf("request %s of %.3f s: its reasons add up to %.3f s", e.Label, e.DurationS, sum)
				}
			}
		})
	}
}
