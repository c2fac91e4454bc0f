package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis"
)

func TestBlameSaysWhatWasLeftOut(t *testing.T) {
	x := &analysis.Explanation{
		Verdict:      analysis.Verdict{Reason: "sync"},
		Blame:        []analysis.Blame{{Share: 0.62, PID: 9, Comm: "sync", Activity: "sync", Syscall: "sync", LongestNS: 1_200_000_000}},
		BlameOmitted: 3,
	}
	var b bytes.Buffer
	Explanation(&b, x)
	out := b.String()
	if !strings.Contains(out, " 62%  sync (pid 9) ran sync()") || !strings.Contains(out, "(3 more under 1.0% each, left out)") {
		t.Fatalf("blame section:\n%s", out)
	}
}

// TestRequestsAreSafe: labels and peers come from clients: a request line
// that carries terminal escapes must not reach the terminal as escapes.
func TestRequestsAreSafe(t *testing.T) {
	evil := "GET /\x1b[2J\x1b]0;pwned\x07"
	r := &analysis.Requests{Count: 1, Payload: true,
		ByLabel:  []analysis.LabelStats{{Label: evil, Count: 1, Verdict: "cpu"}},
		Requests: []analysis.RequestEntry{{Label: evil, Comm: "x\x1bc", Verdict: analysis.RequestVerdict{Reason: "cpu", Summary: "on CPU"}}}}
	var b bytes.Buffer
	Requests(&b, r, "rec\x1b[1m.db")
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Fatalf("escape codes reached the output: %q", b.String())
	}
}
