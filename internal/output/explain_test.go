package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
)

func TestBlameSaysWhatWasLeftOut(t *testing.T) {
	x := &explain.Explanation{
		Verdict:      explain.Verdict{Reason: "sync"},
		Blame:        []explain.Blame{{Share: 0.62, PID: 9, Comm: "sync", Activity: "sync", Syscall: "sync", LongestNS: 1_200_000_000}},
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
	r := &requests.Requests{Count: 1, Payload: true,
		ByLabel:  []requests.LabelStats{{Label: evil, Count: 1, Verdict: "cpu"}},
		Requests: []requests.Entry{{Label: evil, Comm: "x\x1bc", Verdict: requests.Verdict{Reason: "cpu", Summary: "on CPU"}}}}
	var b bytes.Buffer
	Requests(&b, r, "rec\x1b[1m.db")
	if strings.ContainsAny(b.String(), "\x1b\x07") {
		t.Fatalf("escape codes reached the output: %q", b.String())
	}
}

// JSON output carries DEL and bidi controls escaped: the same strings to a
// JSON reader, nothing a terminal or a page acts on (issue 27).
func TestJSONEscapesInvisible(t *testing.T) {
	var b strings.Builder
	if err := JSON(&b, map[string]string{"comm": "a\u202eb\x7fc\u2066"}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\u202e\x7f\u2066") || !strings.Contains(b.String(), `a\u202eb\u007fc\u2066`) {
		t.Errorf("JSON %q", b.String())
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || back["comm"] != "a\u202eb\x7fc\u2066" {
		t.Errorf("decoded %q, %v", back["comm"], err)
	}
}
