package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
)

var (
	realRounds = flag.Int("realistic-rounds", 5, "realistic: rounds of untraced, floor and whyslow runs per work")
	realOnly   = flag.String("works", "", "realistic: only the works whose names contain one of these comma-separated words (all when empty)")
	realUpTo   = flag.Int("realistic-levels", 3, "realistic: measure at most this many levels of each work (1: the default level only)")
)

// sqliteLoop commits one row at a time to a SQLite file for a few seconds
// and prints commits per second: an fsync-bound program, the shape of most
// databases' write path.
const sqliteLoop = `import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER, v TEXT)")
n, end = 0, time.time() + float(sys.argv[2])
start = time.time()
while time.time() < end:
    db.execute("INSERT INTO t VALUES (?, ?)", (n, "x" * 100))
    n += 1
print(n / (time.time() - start))`

// fsyncLoop writes 4 KiB and fdatasyncs it, N times, and prints the seconds
// it took: the write path of a database without the database, each commit
// a trip through the page cache, writeback, the journal and the block layer.
const fsyncLoop = `import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
buf = b"x" * 4096
start = time.time()
for i in range(int(sys.argv[2])):
    os.pwrite(fd, buf, (i % 64) * 4096)
    os.fdatasync(fd)
print(time.time() - start)`

// ddDsync writes 20,000 blocks of 4 KiB with O_DSYNC, each write its own
// trip through the journal and the block layer; dd reports the seconds its
// copy took on stderr.
var ddDsync = []string{"dd", "if=/dev/zero", "bs=4k", "count=20000", "oflag=dsync"}

// ddSeconds reads the seconds of dd's copy from what it printed on stderr:
// "... copied, 1.23 s, 66.4 MB/s". whyslow's report, on the same stderr,
// comes after.
var ddCopied = regexp.MustCompile(`copied, ([0-9.e+-]+) s,`)

func ddSeconds(stdout, stderr []byte) (float64, error) {
	m := ddCopied.FindSubmatch(stderr)
	if m == nil {
		return 0, fmt.Errorf("dd printed no time: %q", lastLine(stderr))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func lastLine(b []byte) string {
	l := strings.Split(strings.TrimSpace(string(b)), "\n")
	return l[len(l)-1]
}

// A level of whyslow, and the floor of its attach points (bench/floor.go).
type level struct {
	name  string
	args  []string // whyslow's, before the command
	floor string   // -floor's level
}

var realLevels = []level{
	{"default level", []string{"run", "--linger=0", "--"}, "default"},
	{"--syscalls", []string{"run", "--syscalls", "--linger=0", "--"}, "syscalls"},
	{"--full", []string{"run", "--full", "--linger=0", "--"}, "full"},
}

// A realistic work: a program that prints one number, its throughput
// (higher is better) or the seconds its work took.
type realWork struct {
	name    string
	unit    string // "commits/s", or "s" for seconds
	argv    []string
	env     []string
	levels  int    // the first levels of realLevels measured (the build's rounds are long)
	before  func() // each run, before it starts
	seconds bool
	// pollIdle: fsync-bound, the work waits on wakeups of idle CPUs; run
	// with a guest's halt polling on (haltPolling).
	pollIdle bool
	// number reads the work's number from its output; nil: the last word
	// of its stdout.
	number func(stdout, stderr []byte) (float64, error)
}

// haltPollNs is a KVM guest's halt polling: how long an idle vCPU polls
// for work before it halts. Off (0), as on the VMs this bench ran on, each
// wakeup of an idle vCPU is a trip through the host of tens of
// microseconds: an fsync loop's iterations, four wakeups each, took 3.3
// times as long (2.05 s against 0.63 s for 30,000), and varied by ±25%
// between runs, more than whyslow's cost above its floor. With polling the
// runs differ by ~3% and by what whyslow adds (BENCHMARKS.md, 1d).
const haltPollNs = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"

// haltPolling sets a guest's halt polling to 200 µs (its usual default)
// for the fsync-bound rows and returns what restores it; false where the
// machine has no such setting (not a KVM guest with cpuidle-haltpoll) or it
// was on already.
func haltPolling() (restore func(), set bool) {
	old, err := os.ReadFile(haltPollNs)
	if err != nil || strings.TrimSpace(string(old)) != "0" {
		return func() {}, false
	}
	if err := os.WriteFile(haltPollNs, []byte("200000"), 0); err != nil {
		return func() {}, false
	}
	return func() { os.WriteFile(haltPollNs, old, 0) }, true
}

// realistic measures whyslow on work that is not a syscall storm, beside
// the floor of each level, in rounds: one untraced run, then each level's
// floor and whyslow, the order turned by one each round so that drift
// falls on every column alike. Each round's whyslow/floor is the ratio of
// their throughputs (for timed work, the inverse of their seconds); the
// table gives the median and range over rounds, and the untraced runs'
// own spread: the noise the ratio is read against.
func realistic(w io.Writer) {
	fmt.Fprintf(w, "\n### Realistic work, beside the floor\n\n"+
		"%d rounds per work; in each, one untraced run and, for each level, one run on its floor (programs that return at once on that level's attach points) and one under `whyslow run`, the order turned by one each round. Ratios are of throughput (timed work: untraced or floor seconds over traced seconds), medians over rounds; **whyslow / floor** is what whyslow adds above the attach points' own cost (goal ≥ 0.97), with its rounds' range. *untraced ±* is half the untraced runs' range over their median: differences smaller than it are noise. On a KVM guest whose halt polling is off, the fsync-bound rows run with it at 200 µs, restored after (`haltPollNs` in bench/realistic.go says why).\n\n",
		*realRounds)
	works, cleanup := realWorks(w)
	defer cleanup()
	fmt.Fprintf(w, "| work | level | untraced | floor | whyslow | floor / untraced | whyslow / untraced | **whyslow / floor** | rounds' range | untraced ± | `whyslow run` whole, s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var base string
	if *baseline != "" {
		copied, err := installCopy(*baseline)
		if err != nil {
			fmt.Fprintf(w, "baseline: %v\n\n", err)
			return
		}
		defer os.RemoveAll(filepath.Dir(copied))
		base = copied
	}
	var notes []string
	for _, wk := range works {
		notes = append(notes, realRow(w, wk, base)...)
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nThe baseline (%s) in the same rounds, each round's ratio of throughput, median (rounds' range):\n\n", *baseline)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

// realWorks lists the works this machine can run, reporting those it
// cannot, and what to remove after.
func realWorks(w io.Writer) ([]realWork, func()) {
	var works []realWork
	var undo []func()
	cleanup := func() {
		for _, f := range slices.Backward(undo) {
			f()
		}
	}
	repo, _ := os.Getwd()
	py, err := exec.LookPath("python3")
	if err != nil {
		fmt.Fprintf(w, "python3 missing: %v\n\n", err)
		return nil, cleanup
	}
	if dir, err := os.MkdirTemp("/var/tmp", "whyslow-bench-sqlite-"); err == nil {
		undo = append(undo, func() { os.RemoveAll(dir) })
		db := filepath.Join(dir, "loop.db")
		works = append(works, realWork{name: "SQLite commit loop (autocommit inserts, each an fsync) on /var/tmp, 3 s", unit: "commits/s",
			argv: []string{py, "-c", sqliteLoop, db, "3"}, levels: 3, before: func() { os.Remove(db) }, pollIdle: true})
	}
	works = append(works, realWork{name: "word-pop: median /popularity request (Flask, 1000 temp files each, on tmpfs)", unit: "s", seconds: true,
		argv: []string{"sh", filepath.Join(repo, "bench", "wordpop.sh")}, levels: 3})
	// The fsync loop's and dd's disk: ext4 over a loop device whose file
	// is in memory, so that runs differ by whyslow, not by the host's disk.
	if d, err := slowdisk.Create(slowdisk.Options{Size: 512 << 20, ImageDir: "/dev/shm"}); err == nil {
		undo = append(undo, func() { d.Close() })
		works = append(works, realWork{name: "fsync loop: 30000 × (4 KiB pwrite + fdatasync), ext4 on a loop device in memory", unit: "s", seconds: true,
			argv: []string{py, "-c", fsyncLoop, filepath.Join(d.Dir, "loop.dat"), "30000"}, levels: 3, pollIdle: true})
		out := filepath.Join(d.Dir, "dd.dat")
		works = append(works, realWork{name: "dd oflag=dsync: 20000 × 4 KiB, ext4 on a loop device in memory, dd's own time", unit: "s", seconds: true,
			argv: append(slices.Clone(ddDsync), "of="+out), levels: 3, pollIdle: true, number: ddSeconds,
			before: func() { os.Remove(out) }})
	} else {
		fmt.Fprintf(w, "fsync loop, dd: no loop device: %v\n\n", err)
	}
	// The build is timed from inside: its own wall time, as the other rows
	// time their own work; what run does after it (the report) is the
	// last column. Only the default level: a round is a minute and a half.
	if gocache, err := os.MkdirTemp("/var/tmp", "whyslow-bench-gocache-"); err == nil {
		undo = append(undo, func() { os.RemoveAll(gocache) })
		buildArgv, buildEnv := goBuild(gocache)
		timed := []string{"sh", "-c", `s=$(date +%s.%N); "$@" || exit 1; e=$(date +%s.%N); echo "$s $e" | awk '{print $2 - $1}'`, "timed"}
		works = append(works, realWork{name: "parallel build: go build -a of a net/http program, -p 2, cold cache", unit: "s", seconds: true,
			argv: append(timed, buildArgv...), env: buildEnv, levels: 1, before: func() { emptyCache(gocache) }})
	}
	var chosen []realWork
	for _, wk := range works {
		if chosenWork(wk.name) {
			chosen = append(chosen, wk)
		}
	}
	return chosen, cleanup
}

// chosenWork says whether -works picks the work named name.
func chosenWork(name string) bool {
	if *realOnly == "" {
		return true
	}
	for _, w := range strings.Split(*realOnly, ",") {
		if w != "" && strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// A run of a realistic work: its number, and its whole wall time.
type realRun struct {
	value, wall float64
}

// runReal runs wk behind prefix and reads the number it prints.
func runReal(wk realWork, prefix []string) (realRun, error) {
	if wk.before != nil {
		wk.before()
	}
	argv := append(append([]string(nil), prefix...), wk.argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), wk.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start).Seconds()
	if err != nil {
		return realRun{}, fmt.Errorf("%s: %w", strings.Join(argv[:min(3, len(argv))], " "), err)
	}
	if wk.number != nil {
		v, err := wk.number(out, stderr.Bytes())
		return realRun{v, wall}, err
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return realRun{}, fmt.Errorf("%s printed no number", wk.name)
	}
	v, err := strconv.ParseFloat(f[len(f)-1], 64)
	return realRun{v, wall}, err
}

// realRow measures one work in rounds and writes a row per level, and,
// with -baseline, a row per level for the baseline binary, measured in the
// same rounds (its ratio to this build per round, after the table).
func realRow(w io.Writer, wk realWork, base string) []string {
	self, _ := os.Executable()
	if wk.pollIdle {
		restore, set := haltPolling()
		defer restore()
		if set {
			wk.name += " (guest halt polling 200 µs)"
		}
	}
	levels := realLevels[:min(wk.levels, *realUpTo)]
	// What is traced at a level: this build, and the baseline if given.
	bins := []string{*whyslow}
	if base != "" {
		bins = append(bins, base)
	}
	// The runs of a round: untraced, then each level's floor and each
	// binary's run at that level.
	type slot struct {
		level  int // -1: untraced
		bin    int // -1: the floor
		prefix []string
	}
	slots := []slot{{level: -1, prefix: []string{"env"}}}
	for i, l := range levels {
		slots = append(slots, slot{i, -1, []string{self, "-floor", l.floor, "--"}})
		for b, bin := range bins {
			slots = append(slots, slot{i, b, append([]string{bin}, l.args...)})
		}
	}
	var untraced []float64
	floor := make([][]float64, len(levels))
	traced := make([][][]float64, len(bins)) // [bin][level][round]
	whole := make([][][]float64, len(bins))
	for b := range bins {
		traced[b] = make([][]float64, len(levels))
		whole[b] = make([][]float64, len(levels))
	}
	for r := range *realRounds {
		for k := range slots {
			s := slots[(k+r)%len(slots)]
			run, err := runReal(wk, s.prefix)
			if err != nil {
				fmt.Fprintf(w, "| %s | | failed: %v | | | | | | | | |\n", wk.name, err)
				return nil
			}
			switch {
			case s.level < 0:
				untraced = append(untraced, run.value)
			case s.bin < 0:
				floor[s.level] = append(floor[s.level], run.value)
			default:
				traced[s.bin][s.level] = append(traced[s.bin][s.level], run.value)
				whole[s.bin][s.level] = append(whole[s.bin][s.level], run.wall)
			}
		}
	}
	// perf is a run's throughput relative to another's.
	perf := func(x, base float64) float64 {
		if wk.seconds {
			return base / x
		}
		return x / base
	}
	num := func(v float64) string {
		if wk.seconds {
			return fmt.Sprintf("%.3f", v)
		}
		return fmt.Sprintf("%.0f", v)
	}
	noise := (slices.Max(untraced) - slices.Min(untraced)) / 2 / median(untraced)
	var notes []string
	for i, l := range levels {
		for b := range bins {
			var overFloor, overBase, floorOverBase []float64
			for r := range untraced {
				overFloor = append(overFloor, perf(traced[b][i][r], floor[i][r]))
				overBase = append(overBase, perf(traced[b][i][r], untraced[r]))
				floorOverBase = append(floorOverBase, perf(floor[i][r], untraced[r]))
			}
			name := l.name
			if b > 0 {
				name += ", baseline"
			}
			fmt.Fprintf(w, "| %s | %s | %s %s | %s | %s | %.3f | %.3f | **%.3f** | %s | ±%.1f%% | %.2f |\n",
				wk.name, name, num(median(untraced)), wk.unit, num(median(floor[i])), num(median(traced[b][i])),
				median(floorOverBase), median(overBase), median(overFloor), spread(overFloor), 100*noise, median(whole[b][i]))
		}
		if len(bins) > 1 {
			var overOld []float64
			for r := range untraced {
				overOld = append(overOld, perf(traced[0][i][r], traced[1][i][r]))
			}
			notes = append(notes, fmt.Sprintf("%s, %s: this build / the baseline %.3f (%s)", wk.name, l.name, median(overOld), spread(overOld)))
		}
	}
	return notes
}
