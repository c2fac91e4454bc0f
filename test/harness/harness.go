// Package harness is what the end-to-end tests share: binaries built once
// per test run, the root requirement, and the machine state a test must leave
// as it found it.
package harness

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// Repo is the repository root.
func Repo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "../.."))
}

// Build compiles whyslow and slowdisk into a new directory and returns it.
func Build() (string, error) {
	dir, err := os.MkdirTemp("", "whyslow-bin-")
	if err != nil {
		return "", err
	}
	os.Chmod(dir, 0o755) // tests drop privileges and still run the binary
	for _, c := range []string{"whyslow", "slowdisk"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, c), "./cmd/"+c)
		cmd.Dir = Repo()
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s: %v\n%s", c, err, out)
		}
	}
	return dir, nil
}

// Main builds the binaries, runs the tests, and removes the binaries. Under
// -short it builds nothing: every test that runs the binaries needs root,
// and the fast tier skips them all (RequireRoot).
func Main(m *testing.M, bin *string) {
	flag.Parse()
	if testing.Short() {
		code := m.Run()
		ReportSkipped()
		os.Exit(code)
	}
	dir, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	ReportSkipped()
	os.Exit(code)
}

// skipped counts the tests RequireRoot skipped in this test binary.
var skipped atomic.Int32

// ReportSkipped says how many tests were skipped for want of root, so that a
// run without it does not pass for a full one. A TestMain calls it after
// m.Run. `go test ./...` shows a passing package's output only with -v, so
// the count also goes to the terminal, when there is one.
func ReportSkipped() {
	n := skipped.Load()
	if n == 0 {
		return
	}
	why := "they need root (as root they run; with CI set they fail instead)"
	if testing.Short() {
		why = "they need root, and -short (make check) leaves them to make test"
	}
	msg := fmt.Sprintf("%s: %d tests skipped: %s\n",
		strings.TrimSuffix(filepath.Base(os.Args[0]), ".test"), n, why)
	fmt.Print(msg)
	if testing.Verbose() {
		return // the line above is shown
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprint(tty, msg)
		tty.Close()
	}
}

// RequireRoot marks a privileged test: one that loads BPF or changes the
// machine (loop devices, throttles, sysctls, cgroups, packages). Without root
// it skips, except in CI, where it fails: CI machines have root, so a missing
// capability there is a broken machine, not a reason to skip.
//
// Under -short (`make check`, the fast tier) it skips whoever runs it, root or
// not, CI or not: that tier leaves every privileged test to `make test` by
// design, so it runs the same tests everywhere and needs no lock.
func RequireRoot(t testing.TB) {
	t.Helper()
	if testing.Short() {
		skipped.Add(1)
		t.Skip("this test needs root: make test runs it, make check (-short) does not")
	}
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("this test needs root (BPF, loop devices, blkio); CI must provide it")
	}
	skipped.Add(1)
	t.Skip("this test needs root")
}

// MachineState is what tests must leave as they found: loop devices,
// throttles, dirty limits, loop mounts.
func MachineState() string {
	var b strings.Builder
	out, _ := exec.Command("losetup", "-a").Output()
	fmt.Fprintf(&b, "loops=[%s] ", strings.TrimSpace(string(out)))
	for _, f := range []string{"read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device"} {
		v, _ := os.ReadFile("/sys/fs/cgroup/blkio/blkio.throttle." + f)
		fmt.Fprintf(&b, "%s=[%s] ", f, strings.TrimSpace(string(v)))
	}
	for _, s := range []string{"dirty_bytes", "dirty_background_bytes", "dirty_ratio", "dirty_background_ratio"} {
		v, _ := os.ReadFile("/proc/sys/vm/" + s)
		fmt.Fprintf(&b, "%s=%s ", s, strings.TrimSpace(string(v)))
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	for _, l := range strings.Split(string(mounts), "\n") {
		if strings.HasPrefix(l, "/dev/loop") {
			fmt.Fprintf(&b, "mount=[%s] ", l)
		}
	}
	return b.String()
}

// Unchanged fails t at cleanup if the machine state changed during the test.
func Unchanged(t *testing.T) {
	before := MachineState()
	t.Cleanup(func() {
		if after := MachineState(); after != before {
			t.Errorf("the test left the machine changed:\nbefore: %s\nafter:  %s", before, after)
		}
	})
}

// Python is the real python3 interpreter, not a shim script (pyenv's is a
// bash script: traces of "python3" would show bash doing the work).
func Python(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed")
	}
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
