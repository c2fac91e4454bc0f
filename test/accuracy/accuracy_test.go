package accuracy

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// sampleSeeds are the programs `make test` runs: twelve dominant kinds
// (cpu-quota, memory, dirty-throttle, fsync, disk-read, tcp, unix,
// poll-socket, event-wait, pipe-sleep, lock-cpu, udp), the dominant block
// in the main thread in 3, in a thread in 5, in a child in 4, and among
// their minors every other kind (TestSampleCoversEveryKind). Found by a
// search over seeds among those that whyslow gets right: the shapes it
// misses are the full set's to report (ACCURACY.md), not a gate on every
// change.
var sampleSeeds = []uint64{10602, 4641, 9665, 3702, 8739, 2786, 7826, 597, 6890, 937, 5979, 15}

// sampledSeeds are those of sampleSeeds that `make test` runs again under
// the sampled capture, as nobody (issue 51): an fsync in the main thread,
// a cold read in a thread the main thread joins (followed from its futex
// into the thread doing the work), a quota, a memory limit, a poll and a
// futex wait that time out. The shapes it misses are ACCURACY.md's sampled
// misses, not a gate on every change.
var sampledSeeds = []uint64{3702, 8739, 10602, 4641, 597, 6890}

// The sample of the full set that `make test` runs: any miss fails, with
// the seed, the program and whyslow's verdict.
func TestAccuracySample(t *testing.T) {
	m := newMachine(t)
	for _, seed := range sampleSeeds {
		r, log := m.run(t, seed, slices.Contains(sampledSeeds, seed))
		check(t, r, log)
	}
}

// TestAccuracyOne runs the programs of -accuracy.seed (a seed, or seeds
// comma-separated), as a miss's report says to, and shows whyslow's report.
func TestAccuracyOne(t *testing.T) {
	if *seedList == "" {
		t.Skip("-accuracy.seed=N runs the program of seed N")
	}
	var seeds []uint64
	for _, f := range strings.Split(*seedList, ",") {
		s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			t.Fatalf("-accuracy.seed: %v", err)
		}
		seeds = append(seeds, s)
	}
	m := newMachine(t)
	for _, seed := range seeds {
		r, log := m.run(t, seed, true)
		t.Logf("%s\nwhyslow said:\n%s", r.Report(), log)
		check(t, r, log)
	}
}

// check fails t unless whyslow named the dominant block's reason and its
// critical path covered the wall time.
func check(t *testing.T, r *Result, log string) {
	t.Helper()
	switch {
	case r.Failure != "":
		t.Errorf("the program did not run as built: %s\n%s\nwhyslow and the program said:\n%s", r.Failure, r.Report(), log)
	case !r.Right():
		t.Errorf("MISS %s", r.Report())
	case !r.Covers():
		t.Errorf("the critical path's %.3f s are not the wall time's %.3f s within %.0f%%\n%s",
			r.PathS, r.WallS, 100*pathTolerance, r.Report())
	default:
		t.Logf("seed %d (%s): %s in %.1f s", r.Program.Seed, r.Program.Dominant().Kind.Name, r.Got, r.Elapsed.Seconds())
	}
	switch {
	case r.Sampled == nil:
	case r.Sampled.Failure != "":
		t.Errorf("the program did not run as built under the sampled capture: %s\n%s\nwhyslow and the program said:\n%s", r.Sampled.Failure, r.Report(), log)
	case !r.SampledRight():
		t.Errorf("SAMPLED MISS %s", r.Report())
	default:
		t.Logf("seed %d (%s), sampled as nobody: %s in %.1f s", r.Program.Seed, r.Program.Dominant().Kind.Name, r.SampledVerdict(), r.Sampled.Elapsed.Seconds())
	}
}

// The full set (`make accuracy`): programs of seeds 1 to -accuracy.n, as
// many as -accuracy.budget allows, and ACCURACY.md at the repository's root
// written from them. Fails if any program missed, after writing it.
func TestAccuracyFull(t *testing.T) {
	if !*full && os.Getenv("WHYSLOW_ACCURACY_FULL") == "" {
		t.Skip("the full set runs with -accuracy.full (make accuracy)")
	}
	m := newMachine(t)
	start := time.Now()
	var results []*Result
	misses := 0
	for seed := uint64(1); seed <= uint64(*fullCount); seed++ {
		if time.Since(start) > *fullBudget {
			break
		}
		r, log := m.run(t, seed, true)
		results = append(results, r)
		if !r.Right() || !r.Covers() {
			misses++
			t.Logf("%s\nwhyslow said:\n%s", r.Report(), log)
		} else if !r.SampledRight() {
			// Written in ACCURACY.md, not a failure: the sampled capture's
			// goal is not met (issue 51), and what it misses is listed.
			t.Logf("sampled miss: %s\nwhyslow said:\n%s", r.Report(), log)
		}
	}
	meta := ReportMeta{
		Command: "make accuracy", Date: time.Now(), Elapsed: time.Since(start),
		Planned: *fullCount, Budget: *fullBudget, Commit: commit(), CPUs: runtime.NumCPU(),
	}
	path := filepath.Join(harness.Repo(), "ACCURACY.md")
	if err := os.WriteFile(path, []byte(WriteReport(results, meta)), 0o644); err != nil {
		t.Fatal(err)
	}
	if misses > 0 {
		t.Errorf("%d of %d programs missed or their path did not cover the wall time: see %s", misses, len(results), path)
	}
}

// commit is the repository's commit, with "+changes" when its tree differs.
func commit() string {
	out, err := exec.Command("git", "-C", harness.Repo(), "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if exec.Command("git", "-C", harness.Repo(), "diff", "--quiet", "HEAD").Run() != nil {
		c += "+changes"
	}
	return c
}
