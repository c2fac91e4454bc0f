// Command bench measures whyslow against the tools people use today and
// writes BENCHMARKS.md: capture overhead (A B A B pairs, median ratio), loss,
// analysis speed, start-up, recording size and memory. Run it with `make bench`.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	whyslow  = flag.String("whyslow", "bin/whyslow", "the whyslow binary")
	out      = flag.String("out", "BENCHMARKS.md", "where to write the results")
	pairs    = flag.Int("pairs", 3, "A B pairs per tool")
	runtimeS = flag.Int("runtime", 3, "seconds per fio run")
	bigS     = flag.Int("big", 30, "seconds of fio for the 10M-event recording")
	sections = flag.String("sections", "overhead,realistic,loss,analysis,startup,peers,requests,watch,pipeline,bystanders,busy-server,sampled", "which sections to run, by name (a subset writes a partial file); explain-build runs only the parallel build's part of analysis")
	baseline = flag.String("baseline", "", "peers, requests, overhead (record --full), startup, bystanders, busy-server, realistic: an earlier whyslow binary to compare with, measured in the same rounds")
	pingSrv  = flag.String("pingpong-server", "", "internal: serve the ping-pong on this Unix socket path or TCP address")
	pingCli  = flag.String("pingpong-client", "", "internal: the ping-pong client, of this Unix socket path or TCP address")
	rounds   = flag.Int("rounds", 100000, "internal: the ping-pong client's round trips")
	only     = flag.String("tools", "", "overhead: only the tools whose names contain one of these comma-separated words (all when empty)")
	floorOf  = flag.String("floor", "", "internal: run the command after the flags with the floor of this level attached (default, syscalls, full, requests)")
	work     string
	built    string // the binary as the Go linker wrote it; *whyslow is an installed copy
)

func main() {
	flag.Parse()
	switch {
	case *pingSrv != "":
		pingPongServer(*pingSrv)
		return
	case *pingCli != "":
		pingPongClient(*pingCli, *rounds)
		return
	case *floorOf != "":
		os.Exit(runOnFloor(*floorOf, flag.Args()))
	}
	var err error
	// tmpfs: cached I/O with no writeback, so the write variant's baseline
	// does not swing with the disk (it did, ±2x, on ext4).
	dir := "/var/tmp"
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir = "/dev/shm"
	}
	if work, err = os.MkdirTemp(dir, "whyslow-bench-"); err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)
	// Every section runs a copy of the binary written front to back, as
	// install(1) or a package writes it: the file the Go linker wrote
	// through a mapping faults ~13 MiB more of itself into each process
	// that runs it, and starts ~10 ms slower (section 4 shows both).
	built = *whyslow
	installed, err := installCopy(built)
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(filepath.Dir(installed))
	*whyslow = installed
	var md bytes.Buffer
	w := io.MultiWriter(&md, os.Stderr)
	header(w)
	chosen := strings.Split(*sections, ",")
	if slices.ContainsFunc(chosen, func(s string) bool { return s == "overhead" || s == "loss" || s == "analysis" || s == "watch" }) {
		prepare() // fio's file
	}
	for _, sec := range []struct {
		name string
		run  func(io.Writer)
	}{{"overhead", overhead}, {"realistic", realistic}, {"loss", loss}, {"analysis", analysis}, {"explain-build", explainBuild}, {"startup", startup}, {"peers", peers}, {"requests", requests}, {"watch", watchCost}, {"pipeline", pipeline}, {"bystanders", bystanders}, {"busy-server", busyServer}, {"sampled", sampled}} {
		if slices.Contains(chosen, sec.name) {
			sec.run(w)
		}
	}
	// Sections measured by hand (30-minute soaks, runs that need a quiet
	// host) are carried over from the file this one replaces.
	if old, err := os.ReadFile(*out); err == nil {
		for _, block := range keptBlocks(string(old)) {
			fmt.Fprint(w, block)
		}
	}
	fmt.Fprint(w, findings)
	if err := os.WriteFile(*out, md.Bytes(), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func header(w io.Writer) {
	var uts syscall.Utsname
	syscall.Uname(&uts)
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	fmt.Fprintf(w, "# Benchmarks\n\nProduced by `make bench` (`go run ./bench`) on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %s memory, kernel %s. Goals are the issue's; they are reported against, not asserted. whyslow runs from a copy of %s written as install(1) writes it (section 4 says why).\n",
		runtime.NumCPU(), cpu, memTotal(), charsToString(uts.Release[:]), built)
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			f := strings.Fields(l)
			kb, _ := strconv.Atoi(f[1])
			return fmt.Sprintf("%.0f GiB", float64(kb)/1024/1024)
		}
	}
	return "?"
}

func charsToString(ca []int8) string {
	var b []byte
	for _, c := range ca {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func file() string { return filepath.Join(work, "bench.dat") }

// prepare lays out the fio file and reads it into the page cache.
func prepare() {
	run("fio", "--name=prep", "--filename="+file(), "--size=256m", "--rw=write", "--bs=1m", "--output=/dev/null")
	run("cat", file())
}

func run(name string, args ...string) []byte {
	cmd := exec.Command(name, args...)
	b, err := cmd.Output()
	if err != nil {
		fail(fmt.Errorf("%s %v: %v", name, args, err))
	}
	return b
}

func fioArgs(rw string, seconds int) []string { return fioJobs(rw, seconds, runtime.NumCPU()) }

func fioJobs(rw string, seconds, jobs int) []string {
	fio, err := exec.LookPath("fio") // bpftrace -c wants an absolute path
	if err != nil {
		fail(err)
	}
	return []string{fio, "--name=bench", "--filename=" + file(), "--size=256m", "--rw=" + rw, "--bs=4k",
		"--ioengine=psync", "--invalidate=0", "--time_based", fmt.Sprintf("--runtime=%d", seconds),
		fmt.Sprintf("--numjobs=%d", jobs), "--group_reporting", "--output-format=json"}
}

type tool struct {
	name string
	wrap func(fio []string) []string
}

const bpftraceScript = `tracepoint:raw_syscalls:sys_enter /comm == "fio"/ { @s[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@s[tid]/ { @lat[args->id] = hist(nsecs - @s[tid]); delete(@s[tid]); }`

// floorWrap runs a command under the bench's own -floor mode.
func floorWrap(level string) func([]string) []string {
	self, _ := os.Executable()
	return func(f []string) []string { return append([]string{self, "-floor", level, "--"}, f...) }
}

// floors pairs each level of whyslow with its floor, for the ratio above it.
var floors = map[string]string{
	"whyslow run (default level)":            "floor of the default level",
	"whyslow run --syscalls":                 "floor of --syscalls and --full",
	"whyslow record --full":                  "floor of --syscalls and --full",
	"whyslow record --full, baseline binary": "floor of --syscalls and --full",
}

// chosenTool says whether -tools picks the tool named name.
func chosenTool(name string) bool {
	if name == "whyslow record --full, baseline binary" && *baseline == "" {
		return false
	}
	if *only == "" {
		return true
	}
	for _, w := range strings.Split(*only, ",") {
		if w != "" && strings.Contains(name, w) {
			return true
		}
	}
	return false
}

func tools() []tool {
	rec := filepath.Join(work, "full.db")
	return []tool{
		{"whyslow run (default level)", func(f []string) []string {
			return append([]string{*whyslow, "run", "--linger=0", "--"}, f...)
		}},
		{"floor of the default level", floorWrap("default")},
		{"whyslow run --syscalls", func(f []string) []string {
			return append([]string{*whyslow, "run", "--syscalls", "--linger=0", "--"}, f...)
		}},
		{"floor of --syscalls and --full", floorWrap("syscalls")},
		{"whyslow top --batch (system-wide, beside it)", func(f []string) []string {
			return append([]string{"sh", "-c", `"$0" top --batch -d 1s >/dev/null 2>&1 & p=$!; sleep 1; "$@"; kill $p; wait $p 2>/dev/null`, *whyslow}, f...)
		}},
		{"whyslow record --full", func(f []string) []string {
			os.Remove(rec)
			os.Remove(rec + ".wal")
			return append([]string{*whyslow, "record", "--full", "-o", rec, "--"}, f...)
		}},
		{"whyslow record --full, baseline binary", func(f []string) []string {
			if *baseline == "" {
				return nil
			}
			os.Remove(rec)
			os.Remove(rec + ".wal")
			return append([]string{*baseline, "record", "--full", "-o", rec, "--"}, f...)
		}},
		{"strace -f -o /dev/null", func(f []string) []string {
			return append([]string{"strace", "-f", "-o", "/dev/null"}, f...)
		}},
		{"perf trace -o /dev/null", func(f []string) []string {
			return append([]string{"perf", "trace", "-o", "/dev/null", "--"}, f...)
		}},
		{"bpftrace (syscall latency histograms)", func(f []string) []string {
			return []string{"bpftrace", "-e", bpftraceScript, "-c", strings.Join(f, " ")}
		}},
	}
}

// fio runs a (possibly wrapped) fio and returns its IOPS.
func fio(argv []string, rw string) (float64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var o bytes.Buffer
	cmd.Stdout = &o
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %v", strings.Join(argv[:min(4, len(argv))], " "), err)
	}
	// fio's JSON is the first {...} object in stdout (bpftrace prints maps after it)
	s := o.String()
	start := strings.Index(s, "{")
	if start < 0 {
		return 0, fmt.Errorf("no fio JSON in output")
	}
	dec := json.NewDecoder(strings.NewReader(s[start:]))
	var r struct {
		Jobs []struct {
			Read, Write struct {
				IOPS float64 `json:"iops"`
			}
		} `json:"jobs"`
	}
	if err := dec.Decode(&r); err != nil || len(r.Jobs) == 0 {
		return 0, fmt.Errorf("parsing fio JSON: %v", err)
	}
	if strings.Contains(rw, "write") {
		return r.Jobs[0].Write.IOPS, nil
	}
	return r.Jobs[0].Read.IOPS, nil
}

// spread is the lowest and highest of v: how far one pair can stray from
// the median, which a single number hides.
func spread(v []float64) string {
	if len(v) == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f–%.2f", slices.Min(v), slices.Max(v))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// defaultPairs is the least number of pairs for the default level's rows:
// single pairs stray by ±0.07 on this VM, as far as the goal is from 1.
const defaultPairs = 5

func overhead(w io.Writer) {
	fmt.Fprintf(w, "\n## 1. Capture overhead\n\nA syscall-heavy workload: fio, 4 KiB `psync` I/O on a 256 MiB file in the page cache, one job per CPU, %d s per run:\n\n```\n%s\n```\n\n", *runtimeS, strings.Join(fioArgs("randread", *runtimeS), " "))
	fmt.Fprintf(w, "Each tool is measured in %d A B pairs (A = untraced, B = traced, alternating so drift cancels), the default level in %d; the ratio is the median of B/A. Goals: default ≥ 0.97, full ≥ 0.85 (one job: one busy core).\n\n", *pairs, max(*pairs, defaultPairs))
	variants := []struct {
		rw   string
		jobs int
	}{{"randread", runtime.NumCPU()}, {"randread", 1}, {"randwrite", runtime.NumCPU()}}
	for _, v := range variants {
		rw := v.rw
		ratioOf := map[string]float64{}
		fmt.Fprintf(w, "### %s, %d job(s)\n\n| tool | untraced IOPS (median) | traced IOPS (median) | ratio | pairs' range |\n|---|---:|---:|---:|---:|\n", rw, v.jobs)
		for _, t := range tools() {
			if !chosenTool(t.name) {
				continue
			}
			if v.jobs == 1 && !strings.HasPrefix(t.name, "whyslow run") && !strings.HasPrefix(t.name, "whyslow record") && !strings.HasPrefix(t.name, "floor") {
				continue // one job: the levels of whyslow only
			}
			n := *pairs
			if strings.HasPrefix(t.name, "whyslow run (default") {
				n = max(n, defaultPairs) // its goal is within the noise of 3 pairs
			}
			var ratios, base, traced []float64
			var errText string
			for i := 0; i < n; i++ {
				a, err := fio(fioJobs(rw, *runtimeS, v.jobs), rw)
				if err != nil {
					errText = err.Error()
					break
				}
				b, err := fio(t.wrap(fioJobs(rw, *runtimeS, v.jobs)), rw)
				if err != nil {
					errText = err.Error()
					break
				}
				base, traced, ratios = append(base, a), append(traced, b), append(ratios, b/a)
			}
			if errText != "" {
				fmt.Fprintf(w, "| %s | failed: %s | | |\n", t.name, errText)
				continue
			}
			fmt.Fprintf(w, "| %s | %.0f | %.0f | %.3f | %s |\n", t.name, median(base), median(traced), median(ratios), spread(ratios))
			ratioOf[t.name] = median(ratios)
		}
		fmt.Fprintln(w)
		// Against the floor: each level's ratio over its floor's, both
		// medians of pairs against untraced in this same run.
		for _, t := range tools() {
			f, ok := floors[t.name]
			if !ok || ratioOf[t.name] == 0 || ratioOf[f] == 0 {
				continue
			}
			fmt.Fprintf(w, "- %s / %s: **%.3f** (the floor itself: %.3f of untraced)\n", t.name, f, ratioOf[t.name]/ratioOf[f], ratioOf[f])
		}
		fmt.Fprintln(w)
	}
}

// record runs `whyslow record` over fio and returns events, lost, seconds, bytes, max RSS.
func record(path string, seconds, jobs int, extra ...string) (rows, lost uint64, secs float64, size int64, rssKB int64) {
	os.Remove(path)
	os.Remove(path + ".wal")
	f := fioArgs("randread", seconds)
	for i, a := range f {
		if strings.HasPrefix(a, "--numjobs=") {
			f[i] = fmt.Sprintf("--numjobs=%d", jobs)
		}
	}
	args := append(append([]string{"record", "--full", "-o", path}, extra...), "--")
	cmd := exec.Command(*whyslow, append(args, f...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Stdout = io.Discard
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	// The recorder's own peak memory: rusage would mix in the workload's.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				fail(fmt.Errorf("record: %v: %s", err, errb.String()))
			}
			waiting = false
		case <-time.After(200 * time.Millisecond):
			if kb := vmHWM(cmd.Process.Pid); kb > rssKB {
				rssKB = kb
			}
		}
	}
	secs = time.Since(start).Seconds()
	rows = sqlNumber(path, "SELECT (SELECT count(*) FROM syscall_raw) + (SELECT count(*) FROM offcpu_raw) + (SELECT count(*) FROM block_raw) + (SELECT count(*) FROM files)")
	lost = sqlNumber(path, "SELECT coalesce(sum(count), 0) FROM lost")
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	return
}

func sqlNumber(path, q string) uint64 {
	b := run(*whyslow, "sql", path, q, "--format", "csv")
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	n, _ := strconv.ParseFloat(lines[len(lines)-1], 64)
	return uint64(n)
}

func loss(w io.Writer) {
	fmt.Fprintf(w, "## 2. Loss\n\n`whyslow record --full` over the randread workload (every pread is an event); events are what the recording holds, lost what the kernel counted as dropped. Goal: 1,000,000 events/s without loss.\n\n")
	fmt.Fprintf(w, "| fio jobs | ring | events | lost | events/s recorded |\n|---:|---|---:|---:|---:|\n")
	for _, c := range []struct {
		jobs int
		ring string
	}{{1, ""}, {runtime.NumCPU(), ""}, {runtime.NumCPU(), "64K"}} {
		// "": the default rings (events 4 MiB, the calls' 8 MiB between the CPUs)
		var extra []string
		label := "default (4M + 8M of calls)"
		if c.ring != "" {
			extra, label = []string{"--ring-size", c.ring}, c.ring+" (each)"
		}
		rows, lost, secs, _, _ := record(filepath.Join(work, "loss.db"), *runtimeS, c.jobs, extra...)
		fmt.Fprintf(w, "| %d | %s | %d | %d | %.0f |\n", c.jobs, label, rows, lost, float64(rows)/float64(*runtimeS))
		_ = secs
	}
	fmt.Fprintln(w, "\nWith a 64 KiB ring the reader cannot keep up with bursts: events are dropped, counted, and every report of that recording says so (\"warning: N events were lost\").")
}

func analysis(w io.Writer) {
	path := filepath.Join(work, "big.db")
	rows, lost, secs, size, rss := record(path, *bigS, runtime.NumCPU())
	fmt.Fprintf(w, "\n## 3. Analysis speed\n\nA recording of %d events (%d lost) made by `whyslow record --full` over %d s of the randread workload (%.1f s with start and stop). Each analysis over the whole recording, output to /dev/null. Goal: under 1 s for 10 M events.\n\n", rows, lost, *bigS, secs)
	fmt.Fprintf(w, "| command | seconds | events/s |\n|---|---:|---:|\n")
	for _, a := range [][]string{
		{"report", "usage", path},
		{"report", "stats", path},
		{"report", "freq", path},
		{"report", "top", path},
		{"report", "log", path, "--max-rows", "100000"},
		{"report", "explain", path},
		{"sql", path, "SELECT name, count(*), sum(dur) FROM syscalls GROUP BY name"},
	} {
		start := time.Now()
		cmd := exec.Command(*whyslow, a...)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(w, "| `whyslow %s` | failed: %v | |\n", strings.Join(a, " "), err)
			continue
		}
		el := time.Since(start).Seconds()
		fmt.Fprintf(w, "| `whyslow %s` | %.2f | %.0f |\n", strings.ReplaceAll(strings.Join(a, " "), path, "big.db"), el, float64(rows)/el)
	}
	logToPipe(w, path)
	explainBuild(w)
	fmt.Fprintf(w, "\n## 5. Recording size and memory\n\n%d events in %.1f MiB: %.1f bytes per event. Maximum RSS of `whyslow record` while recording at this rate: %.0f MiB.\n",
		rows, float64(size)/(1<<20), float64(size)/float64(max(rows, 1)), float64(rss)/1024)
}

// startupRounds is how many times start-up is measured, alternating the
// binaries (other work on the host drifts; alternating spreads it evenly).
const startupRounds = 21

func startup(w io.Writer) {
	type sample struct{ wall, cpu, rssMiB float64 }
	runOnce := func(argv ...string) (sample, bool) {
		start := time.Now()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = io.Discard
		if cmd.Run() != nil {
			return sample{}, false
		}
		wall := time.Since(start).Seconds()
		st := cmd.ProcessState
		var rss float64
		if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
			rss = float64(ru.Maxrss) / 1024
		}
		return sample{wall, (st.UserTime() + st.SystemTime()).Seconds(), rss}, true
	}
	type subject struct {
		name string
		argv []string
		got  []sample
	}
	subjects := []*subject{{name: "true", argv: []string{"true"}}, {name: "this build", argv: []string{*whyslow, "run", "--", "true"}}}
	if *baseline != "" {
		if copied, err := installCopy(*baseline); err == nil {
			defer os.RemoveAll(filepath.Dir(copied))
			subjects = append(subjects, &subject{name: "baseline", argv: []string{copied, "run", "--", "true"}})
		}
	}
	for range startupRounds {
		for _, s := range subjects {
			if v, ok := runOnce(s.argv...); ok {
				s.got = append(s.got, v)
			}
		}
	}
	med := func(s *subject, f func(sample) float64) float64 {
		v := make([]float64, len(s.got))
		for i, x := range s.got {
			v[i] = f(x)
		}
		return median(v)
	}
	wall := func(x sample) float64 { return x.wall * 1000 }
	cpu := func(x sample) float64 { return x.cpu * 1000 }
	rss := func(x sample) float64 { return x.rssMiB }
	fmt.Fprintf(w, "\n## 4. Start-up\n\nOn a copy of the binary, as install(1) or a package writes it. `whyslow run -- true` (default flags), %d rounds, each running `true`, this build and the baseline (`-baseline`, if given) one after the other; medians of wall time (fork to exit), CPU time (user + system, the kernel's verifier included) and peak resident memory (the child's rusage). `true` alone: %.1f ms. Goals: under 100 ms, under 60 MiB (%.0f MiB run from the file `go build` wrote, median of 5).\n\n| binary | wall ms | CPU ms | peak RSS MiB |\n|---|---:|---:|---:|\n",
		startupRounds, med(subjects[0], wall), peakMiB(built, "run", "--", "true"))
	for _, s := range subjects[1:] {
		name := s.name
		if s.name == "baseline" {
			name = "baseline: " + *baseline
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f |\n", name, med(s, wall), med(s, cpu), med(s, rss))
	}
}

// installCopy copies a binary into a new temporary directory, written
// front to back as install(1) does.
func installCopy(bin string) (string, error) {
	dir, err := os.MkdirTemp("", "whyslow-bench-bin-")
	if err != nil {
		return "", err
	}
	src, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst := filepath.Join(dir, "whyslow")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

// peakMiB is the median peak RSS of a command, as /usr/bin/time reports it.
// Not from this process's wait4: a child forked from a big process (this
// one, after the analysis section) inherits its high-water mark across exec.
func peakMiB(argv ...string) float64 {
	out, err := os.CreateTemp("", "whyslow-bench-time-")
	if err != nil {
		return 0
	}
	out.Close()
	defer os.Remove(out.Name())
	var v []float64
	for i := 0; i < 5; i++ {
		cmd := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", out.Name()}, argv...)...)
		cmd.Stderr = io.Discard
		if cmd.Run() != nil {
			continue
		}
		b, _ := os.ReadFile(out.Name())
		if kb, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
			v = append(v, kb/1024)
		}
	}
	return median(v)
}

// vmHWM is a process's peak resident set, in KiB.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb
		}
	}
	return 0
}

// findings says what profiling showed dominates where a goal is missed; it is
// written by hand, from the profiles named, and kept beside the numbers.
const findings = `
## What dominates, and what was done

Profiles: ` + "`bpftool prog show`" + ` with ` + "`kernel.bpf_stats_enabled=1`" + ` (ns per run of each BPF program),
` + "`WHYSLOW_CPUPROFILE=FILE whyslow ...`" + ` with ` + "`go tool pprof`" + ` (the recorder), strace -T (start-up).

- **Default level: no syscall hooked.** The raw syscall tracepoints cost a syscall-bound program
  about 5% even with a program that returns at once, so the default level attaches none. A
  target thread's wait is described at ` + "`sched_switch`" + `: the syscall and its fd come from the
  registers the call saved (` + "`bpf_task_pt_regs`" + `), the fd's file from the thread's file table, and
  one ` + "`syscalls`" + ` row covers the wait. Kernel CPU time is split by CPU samples at
  ` + "`local_timer_entry`" + ` (the syscall a running thread is in, its file or path argument). Bytes per
  file come from pages dirtied and disk reads; files gone at the end are marked deleted. Calls
  that never wait are not seen at this level (` + "`--syscalls`" + ` keeps the per-call hooks; see
  Full capture for what they cost).
- **Realistic work.** word-pop's request costs nothing measurable. The parallel build is timed
  from inside (a shell around it), as the other rows time their own work, and the last column is
  all of ` + "`whyslow run`" + `: the explanation after the build (0.9 s on its 130k events, ~0.35 s since:
  see Explaining a build) was most of the row's gap. SQLite's commit loop pairs spread ±10% with the host's disk, so the
  fsync row runs the same path on ext4 over a loop device in memory (each commit a pwrite and an
  fdatasync through the page cache, writeback, the journal and the block layer, ~37 µs). What a
  commit pays (kernel.bpf_stats_enabled, and detaching one hook at a time, medians of 5):
  ` + "`sched_switch`" + ` 5.7 µs of wall time over ~11 runs, block insert/issue/complete 3.7 µs, ` + "`sched_waking`" + `
  1.8 µs over ~7, dirtying and writeback 1.1 µs. Programs that only return 0 on the same five
  tracepoints cost +2 to +4 µs a commit by themselves: ~29 runs a commit through the tracepoint's
  dispatch, on a VM whose kernel sends every return through a thunk (retpolines and AMD's Safe
  RET), which bpf_stats does not count. whyslow's own process costs nothing measurable there
  (its reader frozen: the same). This round the programs' own time per commit went 7.4 → 6.2 µs:
  a target thread's wait and its waker are written in place in their hash entries (an update and
  a delete a wait, each taking the bucket's lock and a free-list element, were ~280 ns), task
  names are read with two loads instead of a helper's byte loop, and a 64k-slot array answers
  most target tests before the targets hash. A pipe ping-pong's tracing cost fell 2.9 → 1.9 µs
  a round trip; the fsync loop's wall time did not follow (45.3 vs 46.0 µs, 12 pairs on a shared
  machine). 0.99 of a 37 µs commit leaves 0.4 µs for everything: no design that runs a program
  at each of a commit's ~29 scheduler and block events gets there on this VM. Earlier rounds:
  block requests in a preallocated map with one lookup per hook (issue 740 → 533 ns, completion
  440 → 319 ns); rows loaded into DuckDB data chunks by column; DuckDB on one thread while
  recording; caches of what every event looked up; ring readers in Go's netpoller (whyslow woke
  ~700 times a second while the command it ran slept, now ~170). A recording that ` + "`run`" + ` and
  ` + "`attach`" + ` remove after explaining it now commits every 10 s instead of every second: each commit
  cost ~12 ms of CPU (DuckDB serialising the rows into its WAL, every appender flushed), ~15% of
  whyslow's CPU during the build.
- **Wakeup-bound rows (issue 40, goal 2; section 1e).** dd oflag=dsync waits twice a write
  (the data's writeback, the journal's commit), and each wait unwound its stack (~3 µs on this
  VM): two thirds of its hooks' time. An uninterruptible wait outside a sync call now reuses
  the stack its thread took at the same site (schedule()'s return address, read from the kernel
  stack at a distance learned from the first stacks unwound) in the same syscall for 10 ms:
  ` + "`sched_switch`" + ` 448 -> 156 ns a run on dd, its hooks 14 -> 8 µs a write, dd 0.73-0.86 -> 0.86-0.93
  of the floor in the same rounds. The fsync loop (~0.86, goal 0.90) is unchanged: its gap, ~4 µs
  an iteration, is spread over the target's four switches, two wakeups, the block hooks and ~1 µs
  of reading and storing its two records; no one hook holds the microsecond 0.90 needs.
- **Writes** also run ` + "`writeback_dirty_folio`" + ` for each page newly dirtied (hash update with an
  atomic add): the randwrite rows show what that costs.
- **Full capture.** The busy ring drains into an unlinked spool file (a copy per record) and a
  loader decodes it behind the reader into DuckDB; holes are punched behind the loader so the
  spool holds the backlog only. The recording is lossless at the rate the traced program can
  reach. The per-call hooks are what cost the program its throughput. The entry hook now only
  stamps the time; a call's arguments and files are read once from the registers it saved, at
  exit or when a wait or block request inside it needs them; a target thread is known from its
  task storage instead of a hash lookup per call; the fd's struct file is read with a plain load
  instead of a probe read; the ring's wake threshold is set at load. Measured with a loop of 4 KiB
  preads from tmpfs on one pinned CPU (best of 15 runs of 200k calls each, 6 alternating rounds):
  untraced ~1.26 µs a call; the two syscall tracepoints with programs that return at once cost
  +0.25 µs (the kernel's slow syscall path and the BPF dispatch, twice); ` + "`--syscalls`" + ` cost
  +0.70 µs before and +0.57 µs after. So the floor of any per-call hook on this VM already leaves
  only 0.89 of fio's 2.0 µs pread loop, and 0.85 needs the programs' own work under ~0.1 µs a
  call, about what two task storage lookups and two clock reads take. The goal is out of reach of
  per-call hooks here; what is left to cut is ~0.3 µs of program work (~0.12 µs of it reading
  the arguments and the file). Loading the backlog at idle priority (SCHED_IDLE on the loader's
  thread) did not raise the two-job ratio measurably (DuckDB's calls end before a tick preempts
  them); holding the backlog in the spool while tasks wait for a CPU did (the loader's pacer,
  capture/pace.go: two jobs 0.49 -> 0.77 of their floor, section 1c). Rows are now stored by type straight into
  DuckDB's data chunks (the row appender's per-value boxing and type switches were a quarter of
  the recorder's CPU), DuckDB runs on one thread while recording (a commit's checkpoint spun the
  committing thread waiting for its workers), ring readers wait in Go's netpoller (a reader
  blocked in epoll_wait kept sysmon waking), and names and reasons are looked up once: --full
  ~1.75 -> ~0.85 µs of recorder CPU a row. What is left is mostly DuckDB's own work on appends
  (HyperLogLog statistics, compression) and decoding. Even a
  minimal per-call design (a clock read and a task storage slot at entry; at exit one more, the
  fd's file and a 64-byte ring record) costs ~0.2 µs a call on top of the 0.25 µs floor: ~0.82
  of fio's call at best. The ≥ 0.85 goal is not reachable on this VM with per-call hooks, and
  the ≥ 1M events/s goal cannot be shown on 2 cores (traced, two fio jobs make ~450k calls a
  second between them); both need a decision (another machine to measure on, or a --full that
  counts calls that do not wait instead of streaming each).
- **Analysis.** Every analysis reads the numeric raw tables and names only the rows it keeps:
  stats and freq take exact percentiles from a per-class table of durations (DuckDB's own
  ` + "`quantile_disc`" + ` index), usage sums per process, thread, file and syscall before naming, explain
  builds its target tables once, top keeps the N slowest per class with ` + "`arg_max`" + `; blame
  matches block requests to the target's waits by an ASOF join on merged spans (a range join
  was quadratic: 4.8 s on an fsync loop's 30k requests, now 0.4 s). No pre-aggregation at
  record time was needed.
- **Explaining a build.** On a default-level recording of the parallel build (~130k events from
  ~1300 threads in 425 processes) explain took 0.9 s, ~150k events/s. The critical path looks
  through a poller's timer sleep to the thread that worked most meanwhile, and that search
  scanned every thread at each of ~7400 such sleeps: 250 ms. Threads sorted by birth, with a
  tree of the latest death over them, give those alive in a span: the search 250 → 15 ms.
  Loading its 77k waits grew a slice per thread and set integers by reflection (database/sql):
  105 → 75 ms; the walk grew its 53k segments from nothing, and copied them into a slice grown
  the same way: ~40 → ~10 ms. Every query named the 425 pids in an IN list, ~2 ms of planning
  each in some twenty queries: past 16 pids they join a table of them (~70 ms; a shell loop of
  600 short processes 0.23 → 0.11 s). Now ~0.35 s, ~370k events/s, three quarters of it in
  DuckDB: the target's waits made into a temporary table (~100 ms: DuckDB writes a temporary
  table at ~0.5 µs a row of 16 columns, mostly for the names), reading them back into Go (~75
  ms, each value boxed by the driver), the per-thread account (~35 ms) and the target's I/O
  (~30 ms). A query per step keeps the goal out of reach on this shape; what is left to try is
  narrower temporary tables (ids, names joined when shown) and fewer round trips of the waits.
- **Bystanders (section 9, issue 40).** Every context switch and wakeup of the machine runs
  whyslow's scheduler programs. With ` + "`" + `watch` + "`" + ` (every process a target) two bystanders ping-ponging
  over a pipe kept 0.79 of their floor: each of their waits, a few microseconds, was a 184-byte
  record in the ring (~150-185 ns of a ~540 ns ` + "`" + `sched_switch` + "`" + `, then decoded in user space), the
  waker a map of its own (a lookup at each wakeup and switch-in), and the waker's fd table walked
  at each wakeup to see if it wrote on a socket. Now a wait under 1 ms that is not
  uninterruptible joins its thread's previous short wait when their facts match (a run, summed
  in the thread's slot and sent when it reaches 1 ms, spans 10 ms or other facts come: a
  ping-pong of 20,000 round trips sends ~2,500 records for ~40,000 waits), the waker lives in
  its wakee's slot, and the fd table is not walked for a wait on a pipe or file: 0.85 of the
  floor, ` + "`" + `sched_switch` + "`" + ` ~450 ns, ` + "`" + `sched_waking` + "`" + ` ~260 ns (bpf_stats). Tried and dropped: a
  per-tid array telling a short wait at a wakeup without the wakee's task storage, and a hash in
  place of the task storage for the peers' history (no measurable change).
- **Start-up.** Loading the programs took ~0.9 s of CPU in the verifier: the file description
  (with the path walk) was inlined at a dozen call sites, and the syscall exit handler alone
  walked 100k instructions. ` + "`describe_file`" + ` is now a global BPF function, verified once (kernel
  pointers cross it in memory, read as numbers), and the default level loads no syscall handler.
  Readers wake at once on stop (ring buffer ` + "`Flush`" + `), links detach in parallel (each waits for an
  RCU grace period), the kernel's BTF loads while the object parses, and one ` + "`btf.Cache`" + ` serves
  CO-RE, tp_btf targets and kfuncs. ` + "`run`" + ` and ` + "`attach`" + ` explain on the recording the writer just
  finished instead of reopening it. This round (medians of 15 alternating runs, both binaries
  written the same way): the kernel's symbols are kept per boot in ` + "`/run/whyslow/kallsyms`" + ` and
  mapped (reading ` + "`/proc/kallsyms`" + ` cost the kernel ~50 ms of CPU at every start); explain skips
  the steps whose input is empty, as one query tells (DuckDB spends milliseconds planning each
  query over the views even on empty tables: 89 → 14 ms on ` + "`true`" + `); a recording smaller than
  a row group is analysed with one thread; the command's gate shell starts while the programs
  load; the last rows and the metadata go in one transaction with plain inserts. ` + "`run -- true`" + `:
  370 → 210 ms and CPU 380 → 220 ms. Left, phase by phase: ~8 ms to ` + "`main`" + `, ~28 ms parsing the
  object, ~99 ms creating maps (~27 ms, mostly preallocated hashes) and verifying
  (` + "`sched_switch`" + ` ~30 ms of it), ~11 ms attaching and running ` + "`true`" + `, ~11 ms finishing the
  recording, ~14 ms explaining. Verifying programs in parallel gained nothing: two CPU-bound
  threads on this VM each run ~1.5× slower than one.
  Issue 40 (c73bde0 118 ms, main 207 ms on a quiet host): the wait history kept for peers and the
  summed short waits grew what the verifier walks at the default level from 22k instructions to
  77k (` + "`sched_waking`" + ` and ` + "`sched_wakeup_new`" + ` 87 → 11099 each, ` + "`sched_switch`" + ` 6902 → 35123, the
  block hooks 2.7k → 4.5k), and explaining ` + "`true`" + ` ran queries with nothing to find. Now 34k: the
  history's waits are sent through a global function (one wait verified once, not four in each
  of two calls), ` + "`waker_socket`" + `, ` + "`note_recent`" + `, a stack's own id (its 20-slot loop) and a block
  request's file are global functions, ` + "`syscall_class`" + ` is global (inlined, each class it
  returned was a constant the verifier followed on a path of its own), and ` + "`sched_switch`" + ` asks
  what the next task is once the prev side is done (the prev side was verified once per kind of
  next task). Explaining: the kworkers' dispatched reads (10-15 ms, run whenever any process had
  a disk request), the target's calls and the polls' runs (an UPDATE, 5-8 ms, on waits that are
  preemptions) are made empty, in their shape, when their input is. On this host, shared with
  other work (load 5-9), ` + "`run -- true`" + `'s CPU fell from ~560 to ~430 ms (c73bde0 ~360; section 4).
  Phase by phase (CPU ms, medians of 15 alternating runs with timing marks in a throwaway build,
  load ~5; c73bde0 / main / this branch before its last explain change): to ` + "`main`" + ` 9 / 12 / 13;
  parsing the object while the kernel's BTF loads, DuckDB creates the recording and the gate
  shell starts 45 / 68 / 64; maps, BTF and verifying 114 / 203 / 140; attaching and opening the
  gate 13 / 12 / 11; ` + "`true`" + `, stopping and detaching 6 / 8 / 11; the recording's last rows and
  derived tables 9 / 23 / 23; explaining 41 / 69 / 68 (most of it the target's waits when ` + "`true`" + `
  was preempted, as it is on a busy host: ` + "`target_offcpu`" + ` alone is 15-40 ms of DuckDB planning
  for a handful of rows); exiting 4 / 10 / 5. Tried and dropped: ` + "`state_char`" + ` or another
  process's sync as global functions, or the runnable test computed once (each made
  ` + "`sched_switch`" + ` larger: the verifier forks on an unknown result where it had followed
  constants); ` + "`target_io_waits`" + ` as a statement, not a macro (2.9 ms of the 7.9 ms every analysis
  spends making its macros, but a recording missing ` + "`block_raw`" + ` then no longer failed every
  report as damaged: TestMissingTableExitsBadFile); DuckDB's ` + "`allocator_flush_threshold`" + ` (no
  lower peak); the macros in one transaction; constants for ` + "`target_offcpu`" + `'s IN subqueries (no
  gain).
  Issue 40 goal 3, second round (host shared with other suites, load 2-5 on its 2 CPUs: wall
  times about double a quiet host's). Phase by phase, wall / CPU ms since exec, medians of 21
  alternating runs of throwaway builds with timing marks, load ~2.5, fb7a815 → 423d166: ` + "`main`" + `
  16/15 → 13/11; the recording created (beside the object's parse, the kernel's BTF and the
  gate shell) 87/126 → 57/84; maps and programs loaded, capture open 225/273 → 211/249; the
  gate open 230 → 215; capture stopped 242 → 227; the recording finished 273/323 → 245/291;
  explained 318 → 291; exit 332 → 304. Done: one BPF object per flavour (` + "`whyslow`" + ` holds the
  tp_btf programs, ` + "`whyslowRaw`" + ` the raw_tp twins, built with ` + "`-DRAW_TP`" + `): the loader parsed both
  twins to load one (parse 26-32 → 18-22 ms in a benchmark, 8.2 → 5.1 MB of garbage; in
  ` + "`run -- true`" + ` under load 4 the object was parsed at 75 ms since exec instead of 124); a new recording
  is a copy of an empty one kept per boot (` + "`/run/whyslow/recording-HASH.db`" + `, named by the
  schema's statements and DuckDB's version; made by the boot's first recording, checkpointed
  before its first row): DuckDB took 45-55 ms of CPU to create one (its instance 12-18, 33
  tables ~14, 14 views ~18, each bound as made), the copy and its catalog 17-20; the quota
  column is asked of ` + "`pragma_table_info('offcpu_raw')`" + `, not ` + "`duckdb_columns()`" + ` (5-7 → 0.4 ms,
  at the end of every recording and the start of every report); ` + "`target_offcpu`" + ` without its
  calls and socket movers when no call was streamed (a preempted ` + "`true`" + `: 19 → 15 ms, planning);
  the catalog asked for ` + "`tcp_bytes`" + ` only when the target had network peers (1.5 ms); the SQL
  modules' headers found by a scan, not a regexp (init 1.9 → 0.4 ms of every start), the HTML
  template parsed when first used (0.4 ms). Same-run bench against fb7a815 (section 4): 2-10%
  less wall time, 4-10% less CPU; rebased on main, against main's build: 11% and 13%. Tried and dropped: loading the programs on two threads (the
  maps in two sets, then the programs in two sets of equal instructions, each given every map by
  ` + "`MapReplacements`" + `): at a quieter moment −16 ms wall but +26 ms CPU and +5.6 MiB peak, and
  slower under load; the maps made before waiting for the kernel's BTF (which now decodes for
  ~8 ms after the object is parsed): no change measured; the programs' line info left out of
  their BTF (` + "`sched_switch`" + `'s is 77 KB, mostly source lines; the kernel still wants each
  function's first line): no CPU change measurable; GOGC 300; DuckDB's optimizer off for
  explain (binding the views is the cost, not optimizing them). Left, where the time is (CPU,
  this host): the verifier ~50 ms (` + "`sched_switch`" + ` 13.7, ` + "`sched_wakeup_new`" + ` 5.8 and
  ` + "`sched_waking`" + ` 5.3 — one handler verified twice —, ` + "`block_rq_insert`" + ` and ` + "`_issue`" + ` 5.2 each,
  ` + "`local_timer_entry`" + ` 3.6, the writeback and io_uring handlers ~2 each; each program also has
  the kernel search its BTF linearly for its target and for each trusted pointer it reads:
  ` + "`btf_find_by_name_kind`" + ` ~2% of all CPU); the maps ~25 (` + "`stacks`" + ` 5, ` + "`offcpu_start`" + ` 4.5,
  ` + "`seen`" + ` 3.1, ` + "`targets`" + ` 3.1, ` + "`sock_ends`" + ` 3.0, ` + "`cpu`" + ` 1.5, the rings 2.4); the kernel's BTF
  ~13 (beside the parse); each program's BTF marshalled and loaded on its own (77 KB for
  ` + "`sched_switch`" + `); Go's GC during loading (~6 cycles, one with 10 ms of assists); explaining
  ~30-40 (` + "`target_offcpu`" + ` 15-18 of it, planning the ` + "`offcpu`" + ` and ` + "`file_names`" + ` views; the macros
  5, which a connection readied while the programs load could take off the path); finishing
  ~15 (33 appenders closed 2-7, the commit's WAL sync 1-4, deriving reasons 5); before ` + "`main`" + `
  12-16 wall, 11 CPU (the loader and initialisers of a 90 MB binary). ` + "`send_offcpu`" + ` and
  ` + "`fill_offcpu`" + ` as global functions (~700 of ` + "`sched_switch`" + `'s 11.6k instructions) not done:
  another change to ` + "`sched.bpf.h`" + `'s hot path is in progress. The 100 ms goal is not met;
  c73bde0 itself takes 125 ms on a quiet host.
  Third round (1ca9216 → this; medians of 25 alternating runs of builds with timing marks, load
  1.3-3.5): the path walk's callback took ` + "`struct dentry *`" + ` and ` + "`struct mount *`" + `, which put 56 KB
  of the kernel's types into the BTF of every program that describes a file (820 KB marshalled
  and parsed again per program at load; now 149 KB, 13 → 3 ms): 198 → 180 ms wall, 233 → 210
  CPU. Go's collector off while the programs load, one collection at their end (three or four
  cycles with assists and stops before; the object parsed at 16-20 ms since exec instead of
  30-44): −12 ms wall, −14 CPU, same peak. Maps sized in one place (capture/mapsizes.go): those
  keyed by pid or tid at most pid_max (the target set's 256k entries where pid_max is 32768),
  a targeted capture's stacks 16k buckets (a stack whose bucket is taken is sent whole, nothing
  lost): −3 ms. The critical path asked the ` + "`processes`" + ` view for the target's name even when it
  had walked its threads (~6 ms of planning each run): explaining 43 → 33 ms. The end's I/O
  snapshot is not taken once the target has exited (its threads' last readings came with their
  exits; a walk of every process in /proc, ~2 ms, that found nothing). Same-run bench
  against 1ca9216: 172 / 201 ms against 210 / 246, 189 / 204 against 215 / 240 and 187 / 234
  against 228 / 264, 180 / 204 against 227 / 249 (wall / CPU; load 1.0-1.5), and with the
  snapshot change at load 2-2.5, 219 / 239 against 279 / 288 and 223 / 246 against 269 / 298;
  peak 59.5-62.7 MiB against 61.1-64.9. Tried and dropped:
  DuckDB's create and the gate shell started as the programs begin to load rather than beside
  the parse (the kernel's types ready 8 ms sooner, −9 ms in one set of runs, nothing in the
  next, +4 MiB peak); appenders opened at their table's first row (the ~18 that stay empty open
  in 1.5 ms, off the path, and close in 0.2); ` + "`seen`" + `, ` + "`sock_ends`" + ` and ` + "`offcpu_start`" + ` smaller
  for ` + "`run`" + ` (each is sized by the machine, not the mode: a smaller one re-describes files or
  drops waits); one program for ` + "`sched_waking`" + ` and ` + "`sched_wakeup_new`" + ` (tp_btf here, fixed to
  one tracepoint at load; the raw_tp twins are another object to parse, ~10 ms). Left (CPU,
  perf): the verifier ~55 ms; DuckDB ~35% of all: its instance 8% (core functions, ICU ~2 ms,
  JSON ~1 ms, the catalog), planning 9%, and hash tables sized for the CPU's cache whatever
  their rows (aggregates' resize and joins' memset, ~15 ms); the kernel's BTF index ~15 ms
  (sorting its names) beside the object's parse ~10; the maps ~12. Peak: ~54 MiB once the
  recording is finished, +10 MiB of DuckDB's in the explanation, which is the run's peak.
  Fourth round (issue 50, item 6; 06f3842 → 76fe1c5). Phase by phase, wall ms since exec,
  medians of 31 alternating runs of builds with timing marks (load ~1.5): ` + "`main`" + ` 7.2 → 7.5; the
  object parsed 17.3 → 14.7; its maps made (new: beside the kernel's types) → 25.7; the kernel's
  types ready 28.2 → 25.8; the programs verified 114.1 → 82.1 (maps and verifier 86 ms before,
  the verifier 56 now); attached 117.8 → 85.0; loading's garbage collected 122.2 → 89.2; the gate
  open 126.4 → 93.4; capture stopped 131.7 → 98.2; the recording finished 140.8 → 108.0;
  explained 159.1 → 118.5; the end of ` + "`main`" + ` 164.7 → 118.8 (CPU there 187 → 184). Done: the
  kernel verifies the programs on two threads, each program in a collection of its own that
  takes copies of maps made before (a collection of the maps alone, the sections of settings
  and globals with them, so that all programs share one ` + "`.bss`" + `) and shares the kernel's types
  (` + "`btf.Cache`" + `); each thread takes the largest program left, so ` + "`sched_switch`" + ` (20.5k of the
  43.8k instructions verified, half the verifier's time) runs beside the others: 61 → 42 ms for
  all of them alone (medians of 11, load 0.6-1.2; under load 2-4 it had gained nothing, the
  other sessions' work taking the second vCPU), about 5 ms more CPU. The second round's two
  threads had split the maps too and weighed the groups by instructions; this one makes the
  maps first and balances by taking turns. Loading is ` + "`Prepare`" + ` (parse, maps, the kernel's
  types) then ` + "`Load`" + ` (verify, attach): the maps, ~10 ms of the kernel's, are made while the
  kernel's BTF decodes, and DuckDB's create and the gate shell start beside the verifier,
  not beside the parse (on one verifier thread: -7 ms; beside the parse again with two threads:
  the same within 1.5 ms). ` + "`run`" + ` readies its explanation's connection (target_pids and the
  macros, ~5 ms of binding) as soon as the recording exists (-5 ms). An analysis closes its
  connection when done instead of asking the catalog for its temporary tables and dropping
  them (2.4 → 0.2 ms; ` + "`report explain`" + ` and ` + "`report usage`" + ` of a short recording -5.6 and -7.6
  ms); a temporary recording is left open at exit (closing it was ~4 ms of DuckDB freeing its
  catalog and buffers); the recording the writer leaves open says which tables it filled, so
  the derivation of reasons skips the empty ones' queries and the explanation does not ask
  (~5 ms of CPU). kallsyms' copy keeps the symbols by name (` + "`/run/whyslow/kallsyms-v2`" + `): the
  five lookups of the wait sites read all 120k names (~2 ms) and mapped the whole copy; they
  now run once loading's garbage is collected, and the peak during the collection fell 72.9
  → 68.9 MiB (marks build). Tried and dropped: waiting for the collection only before the gate,
  the metadata written meanwhile (attach to gate 12.4 → 12.6 ms under load: both are CPU);
  DuckDB's ` + "`block_allocator_memory`" + ` at 64 MiB for the explanation (no change). Left, where the
  ~119 ms go now (the bench adds ~5-10 ms of fork, exec and exit): to ` + "`main`" + ` 7.5 (the loader and
  ~500 packages' initialisers of a 91 MB binary, mostly page faults); the parse 6.5 and the maps
  11 (the kernel's types decode beside them, ~10 ms of which the index sort is half); the
  verifier 56 (sched_switch alone ~25-30 ms, more when the other thread and DuckDB's create
  share the CPUs); attaching 3 and the collection 4; the metadata and the gate 4; stopping 5
  (links detached, rings drained); finishing the recording 10 (appenders closed 3, reasons
  derived 1-4, the commit); explaining 10.5 (planning over the views; a preempted ` + "`true`" + ` adds
  ` + "`target_offcpu`" + `, ~16 ms). Per run ~10k page faults (~12% of the CPU: the binary's pages, the
  Go heap's garbage, DuckDB's hash tables sized for the CPU's cache whatever their rows). To
  reach 100 ms: the verifier's work back near the third round's (34k instructions:
  ` + "`send_offcpu`" + ` and ` + "`fill_offcpu`" + ` as global functions were the next step named there), which
  only the BPF side can do, and the explanation's planning; the pre-verifier phase is CPU-bound
  on two CPUs, and the rest is a few ms each.
- **Memory.** ` + "`run -- true`" + ` peaks at ~58 MiB (was ~100, then ~75, then ~65), when the rings are mapped:
  ~34 MiB of the binary's file pages (~23 MiB already at ` + "`main`" + `: package and C++ initialisers,
  the whole pclntab; opening DuckDB, a third of it loading its static extensions, adds most of
  the rest; on this kernel a fault maps a whole page-cache folio, so the same binary scores up to
  20 MiB apart depending on how its file was written: highest as ` + "`go build`" + ` wrote it (through a
  mapping), lowest as install(1) writes it, ~10 MiB above that on its first run from a cold page
  cache; the bench runs such a copy), 3 MiB of shared libraries, the two rings
  8 MiB, and
  ~11 MiB anonymous (Go heap ~2, Go runtime ~2.5, DuckDB ~5: its catalog on glibc's heap, its
  buffers on its own jemalloc). Loading left ~10 MiB of garbage in the Go heap (the parsed object,
  the kernel types, the BTF marshalled for the kernel, under 1 MiB live): it goes back to the
  system before the rings are mapped, collected while the programs attach. Explaining, DuckDB
  keeps what each query freed (a hash table of 1 MiB or more per aggregate, however few rows)
  and maps more for the next: a run from a cold page cache, whose recording holds disk requests,
  peaks at up to ~78 MiB there. Having it give that back (` + "`allocator_bulk_deallocation_flush_threshold`" + `
  at 1 MiB) saved 7–8 MiB but cost 15–25% of the explanation's CPU (every query faults its
  tables in again): not done. ` + "`make build`" + ` keeps DuckDB's ~60k C++ symbols out of the dynamic symbol table
  (−6.7 MiB). This round the rings are read by a reader of our own that maps each ring's data
  once (cilium/ebpf's maps it twice, back to back, so that a record that wraps reads as one, and
  the kernel maps every page at mmap: each ring counted twice); a record that wraps is copied
  whole instead, and one that does not is decoded where it lies. That is 8 MiB less resident at
  the default level and 20 MiB at ` + "`--full`" + ` (the same kernel pages, counted once), and no epoll
  fd or eventfd per ring. At full rate, of ~330 MiB: a second of rows
  waiting in DuckDB's appenders (50–100 MB), the open transaction's five unwritten row groups, and
  a 128 MB pool keeping every block just written. Now (~205–215 MiB over 30 s): 31–41 MiB the
  binary, 20 MiB the two rings (40 before the reader of our own), ~17 MiB Go heap, DuckDB's pool (64 MB while
  recording; less spilled rows to temporary files) and ~20 MiB of its own. The spool keeps the
  backlog on disk.
- **Following peers (section 6).** The baseline is whyslow before peers (c73bde0, built to
  /tmp/whyslow-before-peers; ` + "`./bench/run.sh -baseline /tmp/whyslow-before-peers`" + `). This run's host was
  slower than the last one's (untraced fio IOPS about half, the build 24 s against 18 s) and its
  pairs spread wider, the fsync loop's most (0.66, 0.64–0.85). A spot check of the fsync loop on a
  quiet host (20000 commits, ext4 on a loop device in /dev/shm, 4 rounds alternating): untraced
  0.82 s, before peers 1.04–1.09 s, this build 1.07–1.08 s, ` + "`--no-peers`" + ` 1.06–1.12 s: the same.
  What following peers costs everyone else (` + "`kernel.bpf_stats_enabled`" + ` on the bystanders'
  ping-pong): ` + "`sched_switch`" + ` ~125 → ~275 ns a run, ` + "`sched_waking`" + ` ~85 → ~420 ns, the wait
  history's task-storage lookups at each switch-out, switch-in and wakeup of every user task;
  that is the bystanders' 0.87 against 0.97. A wakeup through a pipe no longer describes the
  pipe (only a socket's side is wanted), and a wait under 1 ms notes no waker. Tried and
  dropped: a wait's length from the scheduler's own ` + "`se.exec_start`" + ` (no storage for a short
  wait): pick_next_task sets the next task's before ` + "`sched_switch`" + ` fires, and the runqueues'
  ` + "`clock_task`" + ` differs between CPUs by their IRQ and steal time. The conversation row (0.82
  against 0.99) is what was asked for: the server's every wait is captured now. ` + "`--no-peers`" + `
  turns both off.
- **Requests (section 7).** ` + "`" + `--requests` + "`" + ` now hooks ` + "`" + `tcp:tcp_probe` + "`" + `, which fires for every TCP
  segment the machine receives, to time when a request's bytes arrived (an LRU map by socket,
  updated only by a segment with data into an empty receive queue). Both ends pinned to a CPU each
  (unpinned, the untraced times swung 2x between rounds). The server recorded: 0.856 against
  0.865 before (its every socket call is streamed either way); bystanders' TCP, beside an idle
  target: 0.980 against 0.981. The arrival hook costs under 1% of a one-byte ping-pong, the
  worst case per byte.
- **` + "`" + `report log` + "`" + ` to a pipe (section 3).** Before: 41 s for 9.4M rows (0.23M rows/s), every row
  joined to its names in SQL, converted by database/sql into an Op by reflection, all held in
  memory, then formatted with a fmt call per field; ` + "`" + `| head` + "`" + ` waited for all of it. Now rows come
  from the driver as it gives them (no conversion into destinations: that was most of the time),
  names from maps read once, lines made with appends and caches (the clock's second, a process's
  column, a file's line), the reading and the formatting on two goroutines a batch apart, and the
  time range sorted a slice of about 1M rows at a time (zone maps skip the rest), so the first
  lines go out after the first slice's sort: 3.5M rows/s text, 3.3M CSV, ` + "`" + `| head -20` + "`" + ` in 0.07 s.
`

// logToPipe prints the large recording's whole log to a pipe, as a
// babeltrace2 or perf script user pipes a trace into grep: rows (streamed
// syscalls) per second, and how soon `| head` has its lines.
func logToPipe(w io.Writer, path string) {
	out, err := exec.Command(*whyslow, "sql", path, "SELECT count(*) FROM syscall_raw", "--format", "csv").Output()
	var rows float64
	if f := strings.Fields(string(out)); err == nil && len(f) == 2 {
		rows, _ = strconv.ParseFloat(f[1], 64)
	}
	for _, format := range []string{"text", "csv"} {
		cmd := exec.Command(*whyslow, "report", "log", path, "--format", format)
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			fmt.Fprintf(w, "| `whyslow report log big.db --format %s \\| cat` | failed: %v | |\n", format, err)
			return
		}
		start := time.Now()
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(w, "| `whyslow report log big.db --format %s \\| cat` | failed: %v | |\n", format, err)
			return
		}
		io.Copy(io.Discard, pipe)
		err = cmd.Wait()
		el := time.Since(start).Seconds()
		if err != nil {
			fmt.Fprintf(w, "| `whyslow report log big.db --format %s \\| cat` | failed: %v | |\n", format, err)
			continue
		}
		fmt.Fprintf(w, "| `whyslow report log big.db --format %s \\| cat`: all %.0f rows to a pipe | %.2f | %.0f rows/s |\n", format, rows, el, rows/el)
	}
	start := time.Now()
	sh := exec.Command("sh", "-c", `"$0" report log "$1" | head -20 >/dev/null`, *whyslow, path)
	if err := sh.Run(); err == nil {
		fmt.Fprintf(w, "| `whyslow report log big.db \\| head -20` | %.2f | |\n", time.Since(start).Seconds())
	}
}
