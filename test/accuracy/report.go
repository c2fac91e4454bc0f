package accuracy

import (
	"fmt"
	"strings"
	"time"
)

// ReportMeta is how a full set was run.
type ReportMeta struct {
	Command string // what made it
	Date    time.Time
	Elapsed time.Duration
	Planned int           // programs planned: seeds 1 to Planned
	Budget  time.Duration // the time after which no program was started
	Commit  string        // whyslow's, as git names it
	CPUs    int
}

// fullCommand is what `make accuracy` runs.
const fullCommand = "go test -count=1 -timeout 60m ./test/accuracy -run TestAccuracyFull -accuracy.full"

// WriteReport is ACCURACY.md: per dominant kind, right / total, whether the
// critical path covered the wall time and whether the program ran as built;
// every miss with its seed and whyslow's verdict; and the kinds themselves.
func WriteReport(results []*Result, meta ReportMeta) string {
	var w strings.Builder
	w.WriteString("# Accuracy on programs no one wrote by hand\n\n")
	fmt.Fprintf(&w, "Written by `%s` (`%s`, as root) on %s, whyslow at commit %s: %d programs, seeds 1 to %d, in %.0f minutes on %d CPUs.",
		meta.Command, fullCommand, meta.Date.UTC().Format("2006-01-02"), meta.Commit, len(results), len(results), meta.Elapsed.Minutes(), meta.CPUs)
	if len(results) < meta.Planned {
		fmt.Fprintf(&w, " %d were planned; the budget of %v allowed these.", meta.Planned, meta.Budget)
	}
	w.WriteString("\n\n")
	fmt.Fprintf(&w, `Each program is a Python script generated from its seed (test/accuracy):
one dominant block built to take %.1f to %.1f s, and 1 to %d minor blocks of %.0f%%
to %.0f%% of that, each of a kind whose cause of slowness is known by
construction.`, dominantMin, dominantMin+dominantSpan, minorsMax, 100*minorMin, 100*(minorMin+minorSpan))
	w.WriteString(` The dominant block runs in the main thread, in a thread joined
at once, or in a child process waited for; a minor before or after it in the
main thread, or beside it in a thread or a child process. The dominant kind is
the seed's index in the list of kinds (seed mod 22); everything else comes from
a generator seeded with it, so a seed is a program:
` + "`go test ./test/accuracy -run TestAccuracyOne -accuracy.seed=N -v`" + ` runs it
again. ` + "`whyslow run --linger 0 --json`" + `'s verdict.reason must be the dominant
block's reason.

- **right**: verdict.reason is the dominant kind's reason.
- **path covers wall**: the critical path's seconds (critical_path.by_reason
  summed) are wall_s within 1%, and at most 1% of them is unaccounted
  (coverage.unaccounted_s: CPU on the path its thread was not measured
  using).
- **built as intended**: every minor block took at most 15% of the dominant
  one's measured time (the program measures each block). A miss in a program
  not built so says less about whyslow.
- **as a minor**: how many programs had a minor block of the kind.
- **sampled right**: the same program run again under the sampled capture
  (issue 51: ` + "`whyslow run --sampler proc`" + `, as nobody without
  capabilities, the system's /usr/bin/python3; /proc read at 20 Hz, no stack),
  whose verdict.reason is the dominant kind's reason. Every dominant block
  lasts 0.5 s or more: the goal is the eBPF verdict on every program.

`)
	writeByKind(&w, results)
	writeByPlace(&w, results)
	writeMisses(&w, results)
	writeSampledMisses(&w, results)
	writeOverruns(&w, results)
	writeKinds(&w)
	w.WriteString(debatable)
	return w.String()
}

type tally struct{ right, total, covers, built, minor, sampledRight, sampled int }

func (c *tally) add(r *Result) {
	c.total++
	if r.Right() {
		c.right++
	}
	if r.Covers() {
		c.covers++
	}
	if r.Built() {
		c.built++
	}
	if r.Sampled != nil {
		c.sampled++
		if r.SampledRight() {
			c.sampledRight++
		}
	}
}

func writeByKind(w *strings.Builder, results []*Result) {
	by := map[*Kind]*tally{}
	for _, k := range Kinds {
		by[k] = &tally{}
	}
	var all tally
	for _, r := range results {
		by[r.Program.Dominant().Kind].add(r)
		all.add(r)
		for _, b := range r.Program.Minors() {
			by[b.Kind].minor++
		}
	}
	w.WriteString("## By dominant kind\n\n")
	w.WriteString("| kind | must say | right / total | path covers wall | built as intended | as a minor | sampled right |\n|---|---|---|---|---|---|---|\n")
	for _, k := range Kinds {
		c := by[k]
		fmt.Fprintf(w, "| %s | %s | %d / %d | %d / %d | %d / %d | %d | %d / %d |\n", k.Name, k.Reason, c.right, c.total, c.covers, c.total, c.built, c.total, c.minor, c.sampledRight, c.sampled)
	}
	fmt.Fprintf(w, "| **all** | | **%d / %d** (%.1f%%) | %d / %d | %d / %d | | **%d / %d** (%.1f%%) |\n\n",
		all.right, all.total, percent(all.right, all.total), all.covers, all.total, all.built, all.total,
		all.sampledRight, all.sampled, percent(all.sampledRight, all.sampled))
}

func writeByPlace(w *strings.Builder, results []*Result) {
	by := map[Place]*tally{InMain: {}, InThread: {}, InChild: {}}
	for _, r := range results {
		by[r.Program.Dominant().Place].add(r)
	}
	w.WriteString("## By place of the dominant block\n\n| place | right / total | path covers wall | sampled right |\n|---|---|---|---|\n")
	for _, p := range []Place{InMain, InThread, InChild} {
		fmt.Fprintf(w, "| %s | %d / %d | %d / %d | %d / %d |\n", p, by[p].right, by[p].total, by[p].covers, by[p].total, by[p].sampledRight, by[p].sampled)
	}
	w.WriteString("\n")
}

func writeMisses(w *strings.Builder, results []*Result) {
	w.WriteString("## Misses\n\n")
	var misses, uncovered []*Result
	for _, r := range results {
		if !r.Right() {
			misses = append(misses, r)
		} else if !r.Covers() {
			uncovered = append(uncovered, r)
		}
	}
	if len(misses) == 0 {
		w.WriteString("None.\n\n")
	}
	for _, r := range misses {
		d := r.Program.Dominant()
		fmt.Fprintf(w, "- **seed %d**: %s; must say %s. whyslow said %s  \n", r.Program.Seed, d.Describe(), r.Program.Expected(), r.Verdict())
		fmt.Fprintf(w, "  minors: %s. Measured/built: %s. Wall %.3f s, path %.3f s, built as intended: %v.\n",
			minorsOf(r.Program), r.Measured(), r.WallS, r.PathS, r.Built())
	}
	if len(misses) > 0 {
		w.WriteString("\n")
	}
	w.WriteString("## Right, but the path did not cover the wall time\n\n")
	if len(uncovered) == 0 {
		w.WriteString("None.\n\n")
	}
	for _, r := range uncovered {
		fmt.Fprintf(w, "- seed %d (%s): wall %.3f s, critical path %.3f s\n", r.Program.Seed, r.Program.Dominant().Kind.Name, r.WallS, r.PathS)
	}
	if len(uncovered) > 0 {
		w.WriteString("\n")
	}
}

// writeSampledMisses lists the programs whose sampled verdict was not the
// dominant kind's reason, with the eBPF verdict beside it.
func writeSampledMisses(w *strings.Builder, results []*Result) {
	w.WriteString("## Sampled misses\n\n")
	n := 0
	for _, r := range results {
		if r.Sampled == nil || r.SampledRight() {
			continue
		}
		n++
		d := r.Program.Dominant()
		fmt.Fprintf(w, "- **seed %d**: %s, %s; must say %s. Sampled: %s; eBPF: %s %.0f%%.\n",
			r.Program.Seed, d.Describe(), d.Place, r.Program.Expected(), r.SampledVerdict(), r.Got, 100*r.Share)
	}
	if n == 0 {
		w.WriteString("None.\n")
	}
	w.WriteString("\n")
}

// writeOverruns says, per kind, how often a minor block of it took more
// than its share: where the generator's construction is loosest.
func writeOverruns(w *strings.Builder, results []*Result) {
	type over struct {
		n     int
		cases []string
	}
	by := map[*Kind]*over{}
	for _, r := range results {
		if r.Failure != "" {
			continue
		}
		dom := r.Times[r.Program.Dominant().Name]
		for _, b := range r.Overran() {
			o := by[b.Kind]
			if o == nil {
				o = &over{}
				by[b.Kind] = o
			}
			o.n++
			if len(o.cases) < 4 {
				o.cases = append(o.cases, fmt.Sprintf("seed %d: %.3f s of %.3f built, beside a %s of %.3f s, %s",
					r.Program.Seed, r.Times[b.Name], b.Seconds, r.Program.Dominant().Kind.Name, dom, b.where()))
			}
		}
	}
	w.WriteString("## Minor blocks that took more than 15% of the dominant one\n\n")
	if len(by) == 0 {
		w.WriteString("None.\n\n")
		return
	}
	w.WriteString("| minor kind | times | for example |\n|---|---|---|\n")
	for _, k := range Kinds {
		if o := by[k]; o != nil {
			fmt.Fprintf(w, "| %s | %d | %s |\n", k.Name, o.n, strings.Join(o.cases, "; "))
		}
	}
	w.WriteString("\n")
}

func minorsOf(p *Program) string {
	var s []string
	for _, b := range p.Minors() {
		s = append(s, b.Name+" "+b.Describe())
	}
	return strings.Join(s, "; ")
}

func writeKinds(w *strings.Builder) {
	w.WriteString("## The kinds\n\n| kind | must say | how | variants | needs |\n|---|---|---|---|---|\n")
	for _, k := range Kinds {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", k.Name, k.Reason, k.Why, strings.Join(k.Variants, ", "), k.Fixture)
	}
	w.WriteString("\n")
}

func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// debatable are the kinds whose expected reason is whyslow's choice among
// others a reader could defend.
const debatable = `## Expected reasons that are debatable

- **unix**: the client waits on a local server over a Unix socket while the
  server sleeps. whyslow calls a wait on another process over a pipe or a
  Unix socket ipc, and the same wait over TCP or UDP network
  (docs/run-json.md, "How a poll is told"); the path does not go on into a
  server that was itself asleep. ipc is whyslow's word, and the one expected.
- **tcp, udp**: network, though nothing crossed a real network and the server
  slept: the target's wait stays its wait on the peer, and the server is
  named in "held up by" and blame.
- **lock-cpu, lock-sleep, lock-read**: the waiting thread is in a futex (lock)
  all along; the reason expected is what the holder did meanwhile, as the
  critical path follows a lock a sibling held into it.
- **event-wait (own lock)**: a thread acquiring, with a timeout, a lock it
  holds itself waits for nobody but its timer: sleep, not lock.
- **child-\*, pipe-\***: the parent's wait4 or pipe read is no slowness of its
  own; the reason expected is the child's.
- **memory**: the child waits in the memory cgroup's reclaim, which waits for
  the slow disk to write its dirty pages: memory, the reclaim stall, not
  disk-write, as whyslow's classification rules put the reclaim first.
- **fsync**: whyslow calls a wait inside fsync or fdatasync sync, whatever it
  waits on inside (internal/classify).
`
