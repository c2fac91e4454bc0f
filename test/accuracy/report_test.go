package accuracy

import (
	"strings"
	"testing"
	"time"
)

// The report counts right, covered and built programs per dominant kind,
// and lists a miss with its seed and verdict.
func TestWriteReport(t *testing.T) {
	env := fakeEnv()
	right := &Result{Program: Generate(0, env), Got: "cpu", WallS: 1.2, PathS: 1.2, Times: map[string]float64{}}
	for _, b := range right.Program.Blocks {
		right.Times[b.Name] = b.Seconds
	}
	miss := &Result{Program: Generate(22, env), Got: "sleep", Share: 0.6, Summary: "60% of 1.3 s sleeping", WallS: 1.3, PathS: 1.0}
	failed := &Result{Program: Generate(44, env), Failure: "the program exited 3"}
	md := WriteReport([]*Result{right, miss, failed}, ReportMeta{Command: "make accuracy", Date: time.Unix(0, 0), Planned: 300, Budget: time.Hour, Commit: "abc", CPUs: 2})
	for _, want := range []string{
		"| cpu | cpu | 1 / 3 | 1 / 3 | 1 / 3 |",
		"| **all** | | **1 / 3** (33.3%) | 1 / 3 | 1 / 3 | |",
		"- **seed 22**: cpu, ",
		"whyslow said sleep 60%: 60% of 1.3 s sleeping",
		"- **seed 44**:",
		"no verdict: the program exited 3",
		"300 were planned",
		"1970-01-01",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
