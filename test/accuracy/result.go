package accuracy

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Result is one program's run under whyslow, and what whyslow said.
type Result struct {
	Program *Program
	Text    string // the program, for a miss's report
	// Failure is set when the program did not run as built (it exited
	// non-zero, whyslow gave no explanation): no verdict to judge.
	Failure string
	Got     string  // verdict.reason
	Share   float64 // verdict.share
	Summary string  // verdict.summary
	Ranked  []Ranked
	WallS   float64 // wall_s
	PathS   float64 // the sum of critical_path.by_reason
	// UnaccountedS is coverage.unaccounted_s: path CPU its threads were
	// not measured using (a wait the recording missed).
	UnaccountedS float64
	Lost         uint64 // lost_events
	// Times are the seconds each block took, as the program measured them
	// (for a block in a child, the child's).
	Times   map[string]float64
	Elapsed time.Duration // the whole run, whyslow's start and analysis included
	// Sampled is the same program's run under the sampled capture, as
	// nobody (nil when not run).
	Sampled *SampledResult
}

// SampledResult is what `whyslow run --sampler proc` said of a program,
// run as a user without capabilities.
type SampledResult struct {
	Failure      string
	Got          string  // verdict.reason
	Share, Error float64 // verdict.share and its 95% bound
	Samples      int
	Times        map[string]float64 // the blocks' seconds in this run
	Elapsed      time.Duration
}

// SampledRight says whether the sampled capture named the dominant block's
// reason.
func (r *Result) SampledRight() bool {
	return r.Sampled != nil && r.Sampled.Failure == "" && r.Sampled.Got == r.Program.Expected()
}

// SampledVerdict is the sampled capture's verdict in a line.
func (r *Result) SampledVerdict() string {
	s := r.Sampled
	if s.Failure != "" {
		return "no verdict: " + s.Failure
	}
	return fmt.Sprintf("%s %.0f%% ± %.0f%% (%d samples)", s.Got, 100*s.Share, 100*s.Error, s.Samples)
}

// Ranked is one of verdict.ranked.
type Ranked struct {
	Reason string  `json:"reason"`
	S      float64 `json:"s"`
}

// Right says whether whyslow named the dominant block's reason.
func (r *Result) Right() bool { return r.Failure == "" && r.Got == r.Program.Expected() }

// pathTolerance is how far the critical path's seconds may be from the
// wall time: the path must account for all of it.
const pathTolerance = 0.01

// Covers says whether the critical path's seconds add up to the wall time,
// within pathTolerance of it, and no more of them than that is unaccounted.
func (r *Result) Covers() bool {
	return r.Failure == "" && math.Abs(r.PathS-r.WallS) <= pathTolerance*r.WallS && r.UnaccountedS <= pathTolerance*r.WallS
}

// minorShare is the most a minor block may take of the dominant's time.
const minorShare = 0.15

// Built says whether the program ran as built: every block measured, and
// every minor within minorShare of the dominant's measured time. A miss of
// a program not built so says less about whyslow.
func (r *Result) Built() bool {
	_, ok := r.Times[r.Program.Dominant().Name]
	return ok && r.Failure == "" && len(r.Overran()) == 0
}

// Overran are the minor blocks that took more than minorShare of the
// dominant block's measured time, or were not measured.
func (r *Result) Overran() []*Block {
	dom := r.Times[r.Program.Dominant().Name]
	var over []*Block
	for _, b := range r.Program.Minors() {
		if s, ok := r.Times[b.Name]; !ok || s > minorShare*dom {
			over = append(over, b)
		}
	}
	return over
}

// Verdict is what whyslow said, in a line: "sleep 88%: <summary> [ranked:
// sleep 1.20 s, cpu 0.14 s]".
func (r *Result) Verdict() string {
	if r.Failure != "" {
		return "no verdict: " + r.Failure
	}
	var ranked []string
	for _, k := range r.Ranked {
		ranked = append(ranked, fmt.Sprintf("%s %.2f s", k.Reason, k.S))
	}
	return fmt.Sprintf("%s %.0f%%: %s [ranked: %s]", r.Got, 100*r.Share, r.Summary, strings.Join(ranked, ", "))
}

// Measured is the blocks' measured seconds against those built:
// "b0 1.234/1.200 s, b1 0.101/0.100 s".
func (r *Result) Measured() string {
	var parts []string
	for _, b := range r.Program.Blocks {
		got := "?"
		if s, ok := r.Times[b.Name]; ok {
			got = fmt.Sprintf("%.3f", s)
		}
		parts = append(parts, fmt.Sprintf("%s %s/%.3f s", b.Name, got, b.Seconds))
	}
	return strings.Join(parts, ", ")
}

// Reproduce is the command that runs this program again.
func (r *Result) Reproduce() string {
	return fmt.Sprintf("go test ./test/accuracy -run TestAccuracyOne -accuracy.seed=%d -v", r.Program.Seed)
}

// Report is a miss's or a failure's whole story, for a test's log.
func (r *Result) Report() string {
	var w strings.Builder
	fmt.Fprintf(&w, "seed %d: want %s, whyslow said %s\n", r.Program.Seed, r.Program.Expected(), r.Verdict())
	fmt.Fprintf(&w, "  wall %.3f s, critical path %.3f s, lost events %d\n", r.WallS, r.PathS, r.Lost)
	if r.Sampled != nil {
		fmt.Fprintf(&w, "  sampled (--sampler proc, as nobody): %s\n", r.SampledVerdict())
	}
	fmt.Fprintf(&w, "  blocks measured/built: %s (built as intended: %v)\n", r.Measured(), r.Built())
	fmt.Fprintf(&w, "  again, as root: %s\n", r.Reproduce())
	fmt.Fprintf(&w, "the program:\n%s", r.Text)
	return w.String()
}
