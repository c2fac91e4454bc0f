package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/store/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from what the analyses print now")

func TestMain(m *testing.M) {
	// Text output prints local clock times; the golden files are in UTC.
	time.Local = time.UTC
	os.Exit(m.Run())
}

// runReport runs `whyslow report args...` in this process and returns what it
// printed, the recording's temporary path replaced by REC.
func runReport(t *testing.T, rec string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"report"}, args...))
	err := root.Execute()
	return storetest.RoundFloats(strings.ReplaceAll(out.String(), rec, "REC")), err
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -run Golden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./internal/cli -run Golden -update rewrites it; review the diff):\n%s",
			name, lineDiff(string(want), got))
	}
}

// lineDiff shows the first lines that differ, enough to see what changed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 12; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
			shown++
		}
	}
	return b.String()
}

// TestReportsGolden runs every analysis, as text and as JSON, on each story
// recording and compares what it printed with the golden files.
func TestReportsGolden(t *testing.T) {
	analyses := [][]string{{"explain"}, {"usage"}, {"stats"}, {"freq"}, {"top"}, {"log"}, {"requests"}}
	for _, story := range storetest.Stories {
		t.Run(story.Name, func(t *testing.T) {
			rec := story.Record(t)
			for _, a := range analyses {
				if a[0] == "requests" && story.Name != "slow-request" {
					continue // recorded without --requests: see TestRequestsNeedsSocketCalls
				}
				for _, asJSON := range []bool{false, true} {
					args := append(append([]string{}, a...), rec)
					name := filepath.Join(story.Name, a[0]+".txt")
					if asJSON {
						args = append(args, "--json")
						name = filepath.Join(story.Name, a[0]+".json")
					}
					got, err := runReport(t, rec, args...)
					if err != nil {
						t.Fatalf("report %v: %v", a, err)
					}
					golden(t, name, got)
				}
			}
		})
	}
}
