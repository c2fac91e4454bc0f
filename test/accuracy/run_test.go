package accuracy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// explanation is what the tests read of whyslow.run/v1 (docs/run-json.md).
type explanation struct {
	Schema string `json:"schema"`
	Target struct {
		ExitCode *int `json:"exit_code"`
	} `json:"target"`
	WallS   float64 `json:"wall_s"`
	Verdict struct {
		Reason  string   `json:"reason"`
		Share   float64  `json:"share"`
		Summary string   `json:"summary"`
		Ranked  []Ranked `json:"ranked"`
	} `json:"verdict"`
	Critical struct {
		ByReason map[string]float64 `json:"by_reason"`
	} `json:"critical_path"`
	Coverage struct {
		UnaccountedS float64 `json:"unaccounted_s"`
	} `json:"coverage"`
	LostEvents uint64 `json:"lost_events"`
}

// runTimeout bounds one program's run: its few seconds, whyslow's start and
// its analysis.
const runTimeout = 2 * time.Minute

// run generates the program of seed, runs it under `whyslow run` on the
// machine, and returns what whyslow said of it, with the text of whyslow's
// report (and the program's stderr) as log.
func (m *machine) run(t *testing.T, seed uint64) (r *Result, log string) {
	t.Helper()
	dir := t.TempDir()
	env := m.env
	env.Scratch = filepath.Join(m.disk.Dir, fmt.Sprintf("scratch-%d", seed))
	env.Times = filepath.Join(dir, "times")
	p := Generate(seed, &env)
	r = &Result{Program: p, Text: p.Text(&env)}
	prog := filepath.Join(dir, fmt.Sprintf("seed-%d.py", seed))
	if err := os.WriteFile(prog, []byte(r.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	done := m.prepare(t, p, &env)
	defer done()

	js := filepath.Join(dir, "run.json")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "whyslow"), "run", "--linger", "0", "--json", js, "--", harness.Python(t), prog)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run()
	r.Elapsed = time.Since(start)
	log = out.String()
	r.Times = readTimes(env.Times)

	b, err := os.ReadFile(js)
	if err != nil {
		r.Failure = fmt.Sprintf("no explanation from whyslow (%v): %v", runErr, err)
		return r, log
	}
	var x explanation
	if err := json.Unmarshal(b, &x); err != nil || x.Schema != "whyslow.run/v1" {
		r.Failure = fmt.Sprintf("an explanation whyslow.run/v1 does not read (%v): %.200s", err, b)
		return r, log
	}
	if x.Target.ExitCode == nil || *x.Target.ExitCode != 0 {
		r.Failure = fmt.Sprintf("the program exited %v", x.Target.ExitCode)
		if x.Target.ExitCode != nil {
			r.Failure = fmt.Sprintf("the program exited %d", *x.Target.ExitCode)
		}
	}
	r.Got, r.Share, r.Summary, r.Ranked = x.Verdict.Reason, x.Verdict.Share, x.Verdict.Summary, x.Verdict.Ranked
	r.WallS, r.Lost, r.UnaccountedS = x.WallS, x.LostEvents, x.Coverage.UnaccountedS
	for _, s := range x.Critical.ByReason {
		r.PathS += s
	}
	return r, log
}

// readTimes reads the lines "name seconds" the program's blocks wrote.
func readTimes(path string) map[string]float64 {
	times := map[string]float64{}
	b, _ := os.ReadFile(path)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if s, err := strconv.ParseFloat(f[1], 64); err == nil {
			times[f[0]] = s
		}
	}
	return times
}
