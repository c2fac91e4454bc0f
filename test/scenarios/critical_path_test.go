package scenarios

import (
	"bufio"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/test/harness"
)

// The critical path (issue 11): each scenario in testdata/paths is first
// shown slow for its reason without whyslow; whyslow must then name that
// reason, the object and the process behind it, and its path must add up to
// the wall time.

func pathsDir() string { return filepath.Join(repo, "test", "scenarios", "testdata", "paths") }

// checkPath asserts the verdict and that the path's ranked reasons add up to
// the wall time.
func checkPath(t *testing.T, x *explanation, log string, reasons ...string) {
	t.Helper()
	ok := false
	for _, r := range reasons {
		ok = ok || x.Verdict.Reason == r
	}
	if !ok {
		t.Errorf("verdict %s (%s), want %v\n%s", x.Verdict.Reason, x.Verdict.Summary, reasons, log)
	}
	var sum float64
	for _, r := range x.Verdict.Ranked {
		sum += r.S
	}
	if math.Abs(sum-x.WallS) > 0.05*x.WallS+0.005 {
		t.Errorf("ranked reasons add up to %.3fs, wall %.3fs\n%s", sum, x.WallS, log)
	}
}

// holder starts an untraced process that prints "locked" once it holds its
// lock, and returns it.
func holder(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	if line := startedSaying(t, cmd); line != "locked" {
		t.Fatalf("%v: %q", args, line)
	}
	return cmd
}

// startedSaying starts cmd, to be killed at the end of the test, and
// returns the first line it prints (without its newline): that it is ready,
// and what it has to say (a port, a pid).
func startedSaying(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%v said nothing: %v", cmd.Args, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// timedCPU runs a command untraced and returns its wall and CPU time.
func timedCPU(t *testing.T, args ...string) (wall, cpu time.Duration) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func blamed(x *explanation, pid int, activity string) bool {
	for _, b := range x.Blame {
		if int(b.PID) == pid && b.Activity == activity {
			return true
		}
	}
	return false
}

func TestPathLockHolders(t *testing.T) {
	waitsOnly(t)
	py := harness.Python(t)
	dir := t.TempDir()

	t.Run("flock", func(t *testing.T) {
		lock := filepath.Join(dir, "lock")
		holder(t, py, filepath.Join(pathsDir(), "hold_flock.py"), lock, "1.5")
		if took := timed(t, "flock", lock, "true"); took < time.Second {
			t.Fatalf("flock took %v with the lock held: not slow", took)
		}
		h := holder(t, py, filepath.Join(pathsDir(), "hold_flock.py"), lock, "1.5")
		x, log := runExplained(t, "flock", lock, "true")
		checkPath(t, x, log, "lock")
		if !blamed(x, h.Process.Pid, "lock") || !strings.Contains(x.Verdict.Summary, lock) {
			t.Errorf("the holder (pid %d) and the lock file are not named: %s %+v\n%s", h.Process.Pid, x.Verdict.Summary, x.Blame, log)
		}
	})

	t.Run("futex", func(t *testing.T) {
		word := filepath.Join(dir, "futex")
		holder(t, py, filepath.Join(pathsDir(), "hold_futex.py"), word, "1.5")
		if took, cpu := timedCPU(t, py, filepath.Join(pathsDir(), "wait_futex.py"), word); took < time.Second || cpu > took/4 {
			t.Fatalf("the futex wait took %v (%v on CPU) with the futex held: not a slow wait", took, cpu)
		}
		h := holder(t, py, filepath.Join(pathsDir(), "hold_futex.py"), word, "1.5")
		x, log := runExplained(t, py, filepath.Join(pathsDir(), "wait_futex.py"), word)
		checkPath(t, x, log, "lock")
		if !blamed(x, h.Process.Pid, "lock") {
			t.Errorf("the futex holder (pid %d) is not blamed: %+v\n%s", h.Process.Pid, x.Blame, log)
		}
	})
}

func TestPathPipelineAndChildren(t *testing.T) {
	requireRoot(t)
	py := harness.Python(t)

	t.Run("producer | consumer", func(t *testing.T) {
		script := `"$0" "$1/producer.py" 1.5 | "$0" "$1/consumer.py"`
		if took := timed(t, "sh", "-c", script, py, pathsDir()); took < 1500*time.Millisecond {
			t.Fatalf("the pipeline took %v", took)
		}
		x, log := runExplained(t, "sh", "-c", script, py, pathsDir())
		checkPath(t, x, log, "cpu")
		// The shell waits for both; the path leads from it to the producer,
		// directly or through the consumer's pipe.
		c := x.Critical.Chain
		if len(c) == 0 || c[0].WaiterTID != x.Target.PID || c[len(c)-1].WorkerComm != "python3" ||
			x.Critical.ByReason["cpu"] < 1.2 {
			t.Errorf("the path does not lead from the shell to the producer's CPU: %+v\n%s", c, log)
		}
	})

	t.Run("polling parent", func(t *testing.T) {
		x, log := runExplained(t, py, filepath.Join(pathsDir(), "poll_child.py"), "1.5")
		checkPath(t, x, log, "cpu")
		if x.Critical.ByReason["sleep"] > 0.2*x.WallS {
			t.Errorf("the poller's sleeps are on the path: %.2fs of %.2fs\n%s", x.Critical.ByReason["sleep"], x.WallS, log)
		}
	})

	t.Run("CPU-bound in the kernel", func(t *testing.T) {
		x, log := runExplained(t, py, filepath.Join(pathsDir(), "kernel_files.py"), t.TempDir())
		checkPath(t, x, log, "cpu")
		if !strings.Contains(x.Verdict.Summary, "in the kernel") || !strings.Contains(x.Verdict.Summary, "1000 files") {
			t.Errorf("summary %q does not say the kernel time went to the files", x.Verdict.Summary)
		}
		if x.Time.KernelCPUS["open"] <= 0 {
			t.Errorf("no kernel time in open: %v", x.Time.KernelCPUS)
		}
	})
}

func TestPathOnSlowDisk(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{ReadBPS: 8 << 20, WriteBPS: 4 << 20})
	py := harness.Python(t)

	t.Run("thread pool queued on a lock held during fsync", func(t *testing.T) {
		if took := timed(t, py, filepath.Join(pathsDir(), "lock_pool.py"), d.Dir); took < 700*time.Millisecond {
			t.Fatalf("4 × 1 MiB fsync at 4 MiB/s took %v: not slow", took)
		}
		x, log := runExplained(t, py, filepath.Join(pathsDir(), "lock_pool.py"), d.Dir)
		checkPath(t, x, log, "sync")
		if !strings.Contains(x.Verdict.Summary, "journal-") {
			t.Errorf("summary %q does not name a journal", x.Verdict.Summary)
		}
	})

	t.Run("shell script whose child writes", func(t *testing.T) {
		x, log := runExplained(t, filepath.Join(pathsDir(), "children.sh"), d.Dir)
		checkPath(t, x, log, "disk-write")
		if !strings.Contains(log, "waited for dd") || !strings.Contains(x.Verdict.Summary, "out.bin") {
			t.Errorf("the path does not lead to dd writing out.bin: %s\n%s", x.Verdict.Summary, log)
		}
	})

	fio := func(rw, extra string) []string {
		return append([]string{"fio", "--name=u", "--filename=" + filepath.Join(d.Dir, "fio.dat"), "--rw=" + rw,
			"--bs=64k", "--size=8M", "--ioengine=io_uring", "--iodepth=4", "--output=/dev/null"}, strings.Fields(extra)...)
	}
	t.Run("io_uring O_DIRECT writes", func(t *testing.T) {
		x, log := runExplained(t, fio("write", "--direct=1")...)
		checkPath(t, x, log, "disk-write")
		checkFioFile(t, x, d.Dir, log, false)
	})
	t.Run("io_uring O_DIRECT reads", func(t *testing.T) {
		x, log := runExplained(t, fio("read", "--direct=1")...)
		checkPath(t, x, log, "disk-read")
		checkFioFile(t, x, d.Dir, log, true)
	})
	t.Run("io_uring buffered writes", func(t *testing.T) {
		x, log := runExplained(t, fio("write", "--end_fsync=1")...)
		checkPath(t, x, log, "disk-write", "sync", "dirty-throttle")
		checkFioFile(t, x, d.Dir, log, false)
	})
}

// checkFioFile: io_uring operations count their bytes on their file, and no
// one is blamed for the target's own I/O: nothing on the slow disk is anyone
// else's. Writeback of other data (the test binary `go test` has just
// written, on the disk under the loop file) is the machine's real traffic.
func checkFioFile(t *testing.T, x *explanation, dir, log string, read bool) {
	t.Helper()
	var got uint64
	for _, f := range x.Files {
		if f.Path == filepath.Join(dir, "fio.dat") {
			got = f.WriteBytes
			if read {
				got = f.ReadBytes
			}
		}
	}
	if got < 8<<20 {
		t.Errorf("fio.dat shows %d bytes, want 8 MiB\n%s", got, log)
	}
	for _, b := range x.Blame {
		if (b.Activity == "writeback" || b.Activity == "read") && (b.Path == "" || strings.HasPrefix(b.Path, dir+"/")) {
			t.Errorf("false blame: %s", b.Summary)
		}
	}
}
