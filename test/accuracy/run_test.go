package accuracy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// explanation is what the tests read of whyslow.run/v1 (docs/run-json.md).
type explanation struct {
	Schema  string `json:"schema"`
	Capture string `json:"capture"` // "sampled" from --sampler proc
	Target  struct {
		ExitCode *int `json:"exit_code"`
	} `json:"target"`
	WallS   float64 `json:"wall_s"`
	Samples int     `json:"samples"` // the sampled capture's
	Verdict struct {
		Reason  string   `json:"reason"`
		Share   float64  `json:"share"`
		Error   float64  `json:"error"` // the sampled capture's 95% bound
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

// sampledPython is the Python the sampled run's programs run under: the
// system's, which nobody may run (a pyenv's is under root's home).
const sampledPython = "/usr/bin/python3"

// run generates the program of seed, runs it under `whyslow run` on the
// machine, and returns what whyslow said of it, with the text of whyslow's
// report (and the program's stderr) as log. With sampled, the same program
// runs again under `whyslow run --sampler proc` as nobody without
// capabilities, and r.Sampled is what that said.
func (m *machine) run(t *testing.T, seed uint64, sampled bool) (r *Result, log string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "whyslow-accuracy-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777) // the sampled run's program writes its times here
	env := m.env
	env.Scratch = filepath.Join(m.disk.Dir, fmt.Sprintf("scratch-%d", seed))
	env.Times = filepath.Join(dir, "times")
	p := Generate(seed, &env)
	r = &Result{Program: p, Text: p.Text(&env)}
	prog := filepath.Join(dir, fmt.Sprintf("seed-%d.py", seed))
	if err := os.WriteFile(prog, []byte(r.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	var x explanation
	x, r.Elapsed, log, r.Failure = m.runOnce(t, p, &env, dir, []string{filepath.Join(bin, "whyslow"), "run", "--linger", "0",
		"--json", filepath.Join(dir, "run.json"), "--", harness.Python(t), prog})
	r.Times = readTimes(env.Times)
	r.Got, r.Share, r.Summary, r.Ranked = x.Verdict.Reason, x.Verdict.Share, x.Verdict.Summary, x.Verdict.Ranked
	r.WallS, r.Lost, r.UnaccountedS = x.WallS, x.LostEvents, x.Coverage.UnaccountedS
	for _, s := range x.Critical.ByReason {
		r.PathS += s
	}
	if !sampled {
		return r, log
	}
	os.Remove(env.Times)
	s := &SampledResult{}
	var slog string
	x, s.Elapsed, slog, s.Failure = m.runOnce(t, p, &env, dir, []string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--inh-caps=-all",
		filepath.Join(bin, "whyslow"), "run", "--sampler", "proc", "--linger", "0", "--json", filepath.Join(dir, "sampled.json"), "--", sampledPython, prog})
	s.Times = readTimes(env.Times)
	if s.Failure == "" && x.Capture != "sampled" {
		s.Failure = fmt.Sprintf("the capture was %q, not sampled", x.Capture)
	}
	s.Got, s.Share, s.Error, s.Samples = x.Verdict.Reason, x.Verdict.Share, x.Verdict.Error, x.Samples
	r.Sampled = s
	return r, log + "\nsampled (as nobody, --sampler proc):\n" + slog
}

// runOnce runs the program under argv (a whyslow run whose --json is
// dir/<name>.json, the argument after --json) on the machine made ready
// for it, and reads the explanation. failure says why there is none to
// judge.
func (m *machine) runOnce(t *testing.T, p *Program, env *Env, dir string, argv []string) (x explanation, elapsed time.Duration, log, failure string) {
	t.Helper()
	done := m.prepare(t, p, env)
	defer done()
	js := argv[slices.Index(argv, "--json")+1]
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run()
	elapsed, log = time.Since(start), out.String()
	b, err := os.ReadFile(js)
	if err != nil {
		return x, elapsed, log, fmt.Sprintf("no explanation from whyslow (%v): %v", runErr, err)
	}
	if err := json.Unmarshal(b, &x); err != nil || x.Schema != "whyslow.run/v1" {
		return x, elapsed, log, fmt.Sprintf("an explanation whyslow.run/v1 does not read (%v): %.200s", err, b)
	}
	if x.Target.ExitCode == nil {
		return x, elapsed, log, "the program exited <nil>"
	}
	if *x.Target.ExitCode != 0 {
		return x, elapsed, log, fmt.Sprintf("the program exited %d", *x.Target.ExitCode)
	}
	return x, elapsed, log, ""
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
