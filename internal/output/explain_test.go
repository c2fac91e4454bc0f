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
		Blame:        []analysis.Blame{{Share: 0.62, Summary: "sync (pid 9) ran sync() for 1.2 s while the target waited on storage"}},
		BlameOmitted: 3,
	}
	var b bytes.Buffer
	Explanation(&b, x)
	out := b.String()
	if !strings.Contains(out, " 62%  sync (pid 9) ran sync()") || !strings.Contains(out, "(3 more under 1.0% each, left out)") {
		t.Fatalf("blame section:\n%s", out)
	}
}
