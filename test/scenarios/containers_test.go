package scenarios

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/test/harness"
)

// cpuQuotaCgroup makes a cgroup v1 cpu cgroup limited to 0.2 CPU (20 ms
// every 100 ms, as `docker run --cpus 0.2` sets it) and returns its path in
// the hierarchy and its directory, removed with the test.
func cpuQuotaCgroup(t *testing.T) (cgroup, dir string) {
	t.Helper()
	return v1Cgroup(t, "cpu", "quota", map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "20000"})
}

// v1Cgroup makes a cgroup of its own in controller's v1 hierarchy, named
// after the test process and what, with the files given set (in their
// order: a quota after its period), and returns its path in the hierarchy
// and its directory. It is removed with the test (any straggler moved
// out first); a machine without the controller skips, or fails in CI.
func v1Cgroup(t *testing.T, controller, what string, settings map[string]string) (cgroup, dir string) {
	t.Helper()
	requireRoot(t)
	mount := "/sys/fs/cgroup/" + controller
	if _, err := os.Stat(mount + "/cgroup.procs"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no cgroup v1 %s controller at %s: %v", controller, mount, err)
		}
		t.Skipf("no cgroup v1 %s controller at %s", controller, mount)
	}
	cgroup = fmt.Sprintf("/whyslow-%s-%d", what, os.Getpid())
	dir = mount + cgroup
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(dir + "/cgroup.procs"); err == nil {
			for _, pid := range strings.Fields(string(b)) {
				os.WriteFile(mount+"/cgroup.procs", []byte(pid), 0o644)
			}
		}
		if controller == "memory" {
			os.WriteFile(dir+"/memory.force_empty", []byte("1"), 0o644)
		}
		os.Remove(dir)
	})
	names := make([]string, 0, len(settings))
	for f := range settings {
		names = append(names, f)
	}
	slices.Sort(names) // cpu.cfs_period_us before cpu.cfs_quota_us
	for _, f := range names {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(settings[f]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cgroup, dir
}

// busyInCgroup is a shell command that moves itself into the cgroup at dir,
// then becomes a Python loop busy for secs seconds of wall time.
func busyInCgroup(py, dir string, secs float64) []string {
	return []string{"sh", "-c", fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec "$0" -c 'import time
end = time.time() + %g
while time.time() < end: pass'`, dir, secs), py}
}

// throttledPeriods reads a quota verdict's "throttled it in N of M periods".
var throttledPeriods = regexp.MustCompile(`throttled it in (\d+) of (\d+) periods`)

// A CPU-bound program in a cgroup whose quota is 0.2 CPU, on a machine
// whose CPUs are otherwise idle, is held off the CPU by its quota: the
// verdict is cpu-quota, not runqueue (issue 41: "RUNQUEUE 79% waiting for a
// CPU" read as an overloaded machine), and names the cgroup, the quota in
// CPUs and the kernel's count of throttled periods. In run, attach, and a
// system-wide record.
func TestCPUQuota(t *testing.T) {
	cgroup, dir := cpuQuotaCgroup(t)
	py := harness.Python(t)
	// Untraced first: the quota holds it back (wall ≥ 3× its CPU time).
	start := time.Now()
	c := exec.Command(busyInCgroup(py, dir, 1.5)[0], busyInCgroup(py, dir, 1.5)[1:]...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the busy loop: %v: %s", err, out)
	}
	wall := time.Since(start)
	cpu := c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	if wall < 3*cpu {
		t.Fatalf("untraced: wall %v, CPU %v: the quota did not hold it back", wall, cpu)
	}
	check := func(t *testing.T, x *explanation, log string) {
		t.Helper()
		if x.Verdict.Reason != "cpu-quota" {
			t.Errorf("verdict %s, want cpu-quota\n%s", x.Verdict.Reason, log)
		}
		for _, want := range []string{"cgroup " + cgroup, "0.2 CPU", "throttled it in"} {
			if !strings.Contains(x.Verdict.Summary, want) {
				t.Errorf("summary %q does not say %q", x.Verdict.Summary, want)
			}
		}
		// The kernel's counts are the capture's, not the cgroup's since it
		// began: the tests before this one ran in the same cgroup.
		m := throttledPeriods.FindStringSubmatch(x.Verdict.Summary)
		if m == nil {
			t.Errorf("summary %q gives no periods", x.Verdict.Summary)
		} else if n, _ := strconv.Atoi(m[2]); float64(n)*0.1 > x.WallS+0.5 {
			t.Errorf("%d periods of 100 ms counted in a %.2fs capture: counted since the cgroup began?", n, x.WallS)
		}
		if x.Time.OffCPUS["cpu-quota"] < 0.5*x.WallS {
			t.Errorf("%.2fs held off by the quota of %.2fs: want most of it\n%s", x.Time.OffCPUS["cpu-quota"], x.WallS, log)
		}
	}
	threeWays(t, func(secs float64) []string { return busyInCgroup(py, dir, secs) }, 2, nil, check)
}

// threeWays explains the command argv(secs) as a user would in each of
// run, attach and a system-wide record, and in a watch's incident, and
// checks each explanation:
//   - run: argv(secs);
//   - attach: argv(2*secs) started, attached 300 ms later for secs;
//   - system-wide record: a recording of secs+2 s, argv(secs) run in it,
//     then `report explain --pid`;
//   - watch: argv(secs) run beside `whyslow watch`, a snapshot asked for
//     once it has ended, then `report explain --pid` on the incident's
//     recording (a cgroup's limits read in the watch's window, and again
//     when the incident is written).
//
// before, if given, runs before each (a file removed, caches dropped).
func threeWays(t *testing.T, argv func(secs float64) []string, secs float64, before func(), check func(t *testing.T, x *explanation, log string)) {
	t.Helper()
	prepare := func() {
		if before != nil {
			before()
		}
	}
	t.Run("run", func(t *testing.T) {
		prepare()
		x, log := runExplained(t, argv(secs)...)
		t.Logf("verdict: %s", x.Verdict.Summary)
		check(t, x, log)
	})
	t.Run("attach", func(t *testing.T) {
		prepare()
		a := argv(2 * secs)
		c := exec.Command(a[0], a[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Wait()
		time.Sleep(300 * time.Millisecond) // in its cgroup, at work
		x, log := attachExplained(t, c.Process.Pid, time.Duration(secs*float64(time.Second)))
		t.Logf("verdict: %s", x.Verdict.Summary)
		check(t, x, log)
	})
	t.Run("system-wide record", func(t *testing.T) {
		prepare()
		rec := filepath.Join(t.TempDir(), "all.db")
		r := exec.Command(filepath.Join(bin, "whyslow"), "record", "-o", rec, "-d", fmt.Sprintf("%gs", secs+30))
		rerr := harness.StartRecorder(t, r)
		a := argv(secs)
		c := exec.Command(a[0], a[1:]...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", a, err, out)
		}
		harness.StopRecorder(t, r, rerr, 300*time.Millisecond)
		out, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "explain", rec, "--pid", strconv.Itoa(c.Process.Pid), "--json").Output()
		if err != nil {
			t.Fatalf("report explain --pid: %v", err)
		}
		js := filepath.Join(t.TempDir(), "explain.json")
		if err := os.WriteFile(js, out, 0o600); err != nil {
			t.Fatal(err)
		}
		text, _ := exec.Command(filepath.Join(bin, "whyslow"), "report", "explain", rec, "--pid", strconv.Itoa(c.Process.Pid)).CombinedOutput()
		x := readExplanation(t, js, string(text))
		t.Logf("verdict: %s", x.Verdict.Summary)
		check(t, x, string(text))
	})
	t.Run("watch", func(t *testing.T) {
		prepare()
		dir, stop := startWatch(t, "--window", "2m", "--after", "0s")
		a := argv(secs)
		c := exec.Command(a[0], a[1:]...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", a, err, out)
		}
		if out, err := exec.Command(filepath.Join(bin, "whyslow"), "watch", "--snapshot", "--dir", dir).CombinedOutput(); err != nil {
			t.Fatalf("watch --snapshot: %v\n%s", err, out)
		}
		var rec string
		for deadline := time.Now().Add(60 * time.Second); rec == ""; time.Sleep(200 * time.Millisecond) {
			for _, n := range incidentsIn(dir) {
				if strings.HasSuffix(n, "-snapshot") {
					rec = filepath.Join(dir, n+".db")
				}
			}
			if rec == "" && time.Now().After(deadline) {
				t.Fatalf("no snapshot written:\n%s", stop())
			}
		}
		out, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "explain", rec, "--pid", strconv.Itoa(c.Process.Pid), "--json").Output()
		if err != nil {
			t.Fatalf("report explain --pid on the incident: %v\n%s", err, stop())
		}
		js := filepath.Join(t.TempDir(), "explain.json")
		if err := os.WriteFile(js, out, 0o600); err != nil {
			t.Fatal(err)
		}
		text, _ := exec.Command(filepath.Join(bin, "whyslow"), "report", "explain", rec, "--pid", strconv.Itoa(c.Process.Pid)).CombinedOutput()
		x := readExplanation(t, js, string(text))
		t.Logf("verdict: %s", x.Verdict.Summary)
		check(t, x, string(text))
	})
}

// memoryCgroup makes a cgroup v1 memory cgroup limited to limit bytes, and
// returns its path in the hierarchy and its directory, removed with the test.
func memoryCgroup(t *testing.T, limit int) (cgroup, dir string) {
	t.Helper()
	return v1Cgroup(t, "memory", "memory", map[string]string{"memory.limit_in_bytes": strconv.Itoa(limit)})
}

// readPasses is a shell command that moves itself into the cgroup at dir,
// then reads file n times, printing each pass's seconds. The page cache is
// dropped for the file before the first pass, or before each with dropEach.
func readPasses(py, dir, file string, n int, dropEach bool) []string {
	return []string{"sh", "-c", fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec "$0" -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(%d):
    if i == 0 or %s:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    t = time.time()
    os.lseek(fd, 0, 0)
    while os.read(fd, 1 << 20): pass
    print("%%.3f" %% (time.time() - t))
' %s`, dir, n, map[bool]string{true: "True", false: "False"}[dropEach], file), py}
}

// secondsOf runs argv and returns the seconds it printed, a line each.
func secondsOf(t *testing.T, argv []string) []float64 {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	var s []float64
	for _, f := range strings.Fields(string(out)) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%v printed %q", argv, out)
		}
		s = append(s, v)
	}
	return s
}

// A program that reads a 48 MiB file three times in a memory cgroup limited
// to 16 MiB reads it from storage each time: the limit evicted it between
// passes. The verdict is disk-read, and says how much was re-read and
// under which cgroup's limit (issue 41: the verdict said what was read,
// not why it came from storage three times).
func TestMemoryLimitRereads(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{ReadBPS: 48 << 20, Size: 256 << 20})
	cgroup, dir := memoryCgroup(t, 16<<20)
	py := harness.Python(t)
	file := filepath.Join(d.Dir, "big.bin")
	if err := os.WriteFile(file, make([]byte, 48<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// Untraced first: without the limit the later passes come from the
	// page cache; with it they are as slow as the first.
	free := secondsOf(t, readPasses(py, "/sys/fs/cgroup/memory", file, 3, false))
	limited := secondsOf(t, readPasses(py, dir, file, 3, false))
	if len(free) != 3 || len(limited) != 3 || limited[2] < 2*free[2] || limited[2] < 0.3 {
		t.Fatalf("passes without the limit %v, with it %v: the limit did not evict the file", free, limited)
	}
	threeWays(t, func(secs float64) []string { return readPasses(py, dir, file, int(secs), false) }, 3, nil,
		func(t *testing.T, x *explanation, log string) {
			if x.Verdict.Reason != "disk-read" {
				t.Errorf("verdict %s, want disk-read\n%s", x.Verdict.Reason, log)
			}
			for _, want := range []string{"re-read ", "evicted under memory cgroup " + cgroup + "'s limit (16.0 MiB)"} {
				if !strings.Contains(x.Verdict.Summary, want) {
					t.Errorf("summary %q does not say %q", x.Verdict.Summary, want)
				}
			}
		})
}

// A writer in a memory cgroup limited to 32 MiB, writing 64 MiB to a slow
// disk: its dirty data does not fit, so to cache more it must reclaim, and
// reclaim waits for the disk to write. The verdict is memory (the reclaim
// stall), naming the cgroup and its limit: not "other", as such waits were.
func TestMemoryLimitReclaim(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 16 << 20, Size: 256 << 20})
	cgroup, dir := memoryCgroup(t, 32<<20)
	file := filepath.Join(d.Dir, "w.bin")
	write := func(cg string, mib int) []string {
		return []string{"sh", "-c", fmt.Sprintf(`echo $$ > %s/cgroup.procs && exec dd if=/dev/zero of=%s bs=1M count=%d status=none`, cg, file, mib)}
	}
	// Untraced first: without the limit the writes land in the page cache
	// at once; with it the writer waits for the disk.
	free := timed(t, write("/sys/fs/cgroup/memory", 64)...)
	os.Remove(file)
	exec.Command("sync").Run()
	limited := timed(t, write(dir, 64)...)
	os.Remove(file)
	exec.Command("sync").Run()
	if limited < 2*free || limited < time.Second {
		t.Fatalf("64 MiB written in %v without the limit, %v with it: the limit did not hold the writer", free, limited)
	}
	clean := func() {
		os.Remove(file)
		exec.Command("sync").Run()
	}
	threeWays(t, func(secs float64) []string { return write(dir, int(32*secs)) }, 2, clean,
		func(t *testing.T, x *explanation, log string) {
			if x.Verdict.Reason != "memory" {
				t.Errorf("verdict %s, want memory\n%s", x.Verdict.Reason, log)
			}
			if want := "in memory cgroup " + cgroup + ", limit (32.0 MiB)"; !strings.Contains(x.Verdict.Summary, want) {
				t.Errorf("summary %q does not say %q", x.Verdict.Summary, want)
			}
		})
	clean()
}

// A reader in a blkio cgroup of its own limited to 8 MiB/s of reads on a
// disk that is not limited for anyone else: the verdict is disk-read, and
// says the cgroup's limit held it (issue 41, item 3: the devices table
// showed only the root cgroup's throttles).
func TestIOLimitOfItsCgroup(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{Size: 256 << 20})
	requireRoot(t)
	mount := "/sys/fs/cgroup/blkio"
	cgroup, dir := v1Cgroup(t, "blkio", "io", map[string]string{"blkio.throttle.read_bps_device": fmt.Sprintf("%s %d", d.DevNum, 8<<20)})
	py := harness.Python(t)
	file := filepath.Join(d.Dir, "data.bin")
	if err := os.WriteFile(file, make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// One pass each: free, then in the cgroup (2 s at 8 MiB/s).
	free := secondsOf(t, readPasses(py, mount, file, 1, true))
	limited := secondsOf(t, readPasses(py, dir, file, 1, true))
	if limited[0] < 3*free[0] || limited[0] < 1 {
		t.Fatalf("16 MiB read in %.2fs outside the cgroup, %.2fs in it: its limit did not hold the reader", free[0], limited[0])
	}
	threeWays(t, func(secs float64) []string { return readPasses(py, dir, file, int(secs/2), true) }, 2, nil,
		func(t *testing.T, x *explanation, log string) {
			if x.Verdict.Reason != "disk-read" {
				t.Errorf("verdict %s, want disk-read\n%s", x.Verdict.Reason, log)
			}
			if want := "in blkio cgroup " + cgroup + ", limited to 8.0 MiB/s of reads on " + strings.TrimPrefix(d.Device, "/dev/"); !strings.Contains(x.Verdict.Summary, want) {
				t.Errorf("summary %q does not say %q", x.Verdict.Summary, want)
			}
		})
}

// top shows a row per cgroup with --cgroups, and a throttled container's
// time lost to its quota in its own column and in LOST (issue 41: top and
// the exporter group by cgroup).
func TestTopByCgroup(t *testing.T) {
	cgroup, dir := cpuQuotaCgroup(t)
	py := harness.Python(t)
	argv := busyInCgroup(py, dir, 6)
	busy := exec.Command(argv[0], argv[1:]...)
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer busy.Wait()
	defer busy.Process.Kill()
	out, err := exec.Command(filepath.Join(bin, "whyslow"), "top", "--batch", "--cgroups", "-n", "3", "-d", "1s",
		"--cgroup", cgroup).CombinedOutput()
	if err != nil {
		t.Fatalf("whyslow top: %v\n%s", err, out)
	}
	frames := strings.Split(strings.TrimSpace(string(out)), "whyslow top ")
	last := frames[len(frames)-1]
	var header []string
	for _, l := range strings.Split(last, "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[0] == "PID" {
			header = f
			continue
		}
		if header == nil || len(f) <= slices.Index(header, "OTHER") || !strings.HasPrefix(f[1], "/whyslow-qu") {
			continue
		}
		share := func(col string) float64 {
			i := slices.Index(header, col)
			v, _ := strconv.ParseFloat(f[i], 64)
			return v
		}
		if f[0] != "1" || share("QUOTA") < 50 || share("LOST") < share("QUOTA") || share("RUNQ") > 20 {
			t.Errorf("the cgroup's row: %s processes, QUOTA %.0f%%, LOST %.0f%%, RUNQ %.0f%%; want 1, most of the time held off by the quota, counted as lost\n%s",
				f[0], share("QUOTA"), share("LOST"), share("RUNQ"), last)
		}
		return
	}
	t.Fatalf("no row for cgroup %s in the last frame:\n%s", cgroup, last)
}
