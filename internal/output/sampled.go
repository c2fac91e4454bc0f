package output

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
)

// NotKnownBySampling is what a look in /proc cannot tell, said rather than
// guessed, in the text and the JSON (not_known).
var NotKnownBySampling = []string{
	"who ended a wait (the waker)",
	"the critical path across processes, beyond a parent's wait for its child",
	"per-request cuts",
}

// SampledJSON is whyslow.run/v1 from the sampled capture.
type sampledJSON struct {
	Schema  string `json:"schema"`
	Capture string `json:"capture"`
	*reports.Sampled
	NotKnown []string `json:"not_known"`
}

// SampledExplanationJSON writes a sampled explanation as whyslow.run/v1,
// with "capture": "sampled".
func SampledExplanationJSON(w io.Writer, s *reports.Sampled) error {
	s.Verdict.Summary = sampledVerdictSentence(s)
	return JSON(w, sampledJSON{Schema: "whyslow.run/v1", Capture: "sampled", Sampled: s, NotKnown: NotKnownBySampling})
}

// sampledVerdictSentence: "78% ± 9% of 4.20 s held off the CPU by its
// cgroup's CPU quota (84 samples at 20 Hz)".
func sampledVerdictSentence(s *reports.Sampled) string {
	v := s.Verdict
	if v.Kind == "none" {
		return "no sample of the target was taken: it ended before the first look"
	}
	words := reasonWords[string(v.Reason)]
	sentence := fmt.Sprintf("%s ± %s of %s %s (%d samples at %d Hz)", format.Pct(v.Share), format.Pct(v.Error),
		format.Seconds(s.WallS), words, s.Samples, s.Hz)
	if v.Kind == "mixed" {
		sentence = "no single reason had half of the wall time; the largest: " + sentence
	}
	return sentence
}

// SampledExplanation prints where a sampled target's time went, at most
// 80 columns wide.
func SampledExplanation(w io.Writer, s *reports.Sampled) {
	fmt.Fprintf(w, "\nwhyslow: %s (pid %d)", format.Safe(commandLine(s.Target.Command, 44)), s.Target.PID)
	if s.Target.ExitCode != nil {
		fmt.Fprintf(w, ", exit %d", *s.Target.ExitCode)
	}
	fmt.Fprintf(w, ", wall %s, sampled\n", format.Seconds(s.WallS))
	verdict := strings.ToUpper(string(s.Verdict.Reason))
	if s.Verdict.Kind == "none" {
		verdict = "NONE"
	}
	fmt.Fprintf(w, "\nverdict: %s\n", verdict)
	for _, line := range wrap(sampledVerdictSentence(s), 76) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if s.Samples == 0 {
		return
	}
	Heading(w, fmt.Sprintf("Where the wall time went (%d samples at %d Hz; ± is a 95%% bound)", s.Samples, s.Hz))
	t := Table{Cols: []Column{{Title: "reason"}, {Title: "time", Right: true}, {Title: "share", Right: true}, {Title: "±", Right: true}, {Title: ""}}}
	for _, r := range s.Shares {
		t.Row(string(r.Reason), format.Seconds(r.S), format.Pct(r.Share), format.Pct(r.Error), Bar(r.Share, s.Shares[0].Share, 36))
	}
	t.Write(w)
	if len(s.Objects) > 0 {
		Heading(w, "What its waits were on (share of the wall time)")
		t := Table{Cols: []Column{{Title: "share", Right: true}, {Title: "reason"}, {Title: "kind"}, {Title: "file or peer"}}}
		for _, o := range s.Objects {
			t.Row(format.Pct(o.Share), string(o.Reason), o.Kind, format.Safe(o.Object))
		}
		t.Write(w)
	}
	Heading(w, "Threads (each thread's own samples)")
	tt := Table{Cols: []Column{{Title: "pid", Right: true}, {Title: "tid", Right: true}, {Title: "comm"}, {Title: "samples", Right: true}, {Title: "mostly"}}}
	shown := s.Threads
	if len(shown) > 12 {
		shown = shown[:12]
	}
	for _, th := range shown {
		tt.Row(fmt.Sprint(th.PID), fmt.Sprint(th.TID), format.Safe(th.Comm), fmt.Sprint(th.Samples), sampledMostly(th.ByReason))
	}
	tt.Write(w)
	if len(s.Threads) > len(shown) {
		fmt.Fprintf(w, "(%d more threads: --json lists them all)\n", len(s.Threads)-len(shown))
	}
	fmt.Fprintln(w)
	note := "Sampled from /proc, not traced (no eBPF): sampling cannot tell " + strings.Join(NotKnownBySampling, ", ") + "."
	if s.NoStack {
		note += " Kernel stacks were not readable (root only): waits were told by their syscall, file and wait channel."
	}
	if s.Vanished > 0 {
		note += fmt.Sprintf(" %d looks at threads that exited meanwhile were dropped.", s.Vanished)
	}
	for _, line := range wrap(note, 78) {
		fmt.Fprintln(w, line)
	}
}

// sampledMostly: "cpu 80%, sleep 20%": a thread's largest shares.
func sampledMostly(by map[event.Reason]float64) string {
	type kv struct {
		r event.Reason
		v float64
	}
	var all []kv
	for r, v := range by {
		all = append(all, kv{r, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].r < all[j].r
	})
	var parts []string
	for i, x := range all {
		if i == 3 || x.v < 0.05 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", x.r, format.Pct(x.v)))
	}
	return strings.Join(parts, ", ")
}
