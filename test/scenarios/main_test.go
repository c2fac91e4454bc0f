// Package scenarios runs the seed scenarios of examples/ end to end, on the
// real kernel, through the same run.sh a person would use.
package scenarios

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	repo string // repository root
	bin  string // where whyslow and slowdisk were built for this run
)

func TestMain(m *testing.M) {
	wd, _ := os.Getwd()
	repo = filepath.Clean(filepath.Join(wd, "../.."))
	dir, err := os.MkdirTemp("", "whyslow-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	for _, c := range []string{"whyslow", "slowdisk"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, c), "./cmd/"+c)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", c, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("scenario tests need root (loop devices, blkio, BPF); CI must provide it")
	}
	t.Skip("scenario tests need root")
}

// scenario runs examples/<dir>/run.sh args... and returns stdout and stderr.
func scenario(t *testing.T, env []string, dir string, args ...string) (string, string) {
	t.Helper()
	requireRoot(t)
	before := machineState(t)
	t.Cleanup(func() {
		if after := machineState(t); after != before {
			t.Errorf("scenario left the machine changed:\nbefore: %s\nafter:  %s", before, after)
		}
	})
	cmd := exec.Command("/bin/sh", append([]string{filepath.Join(repo, "examples", dir, "run.sh")}, args...)...)
	cmd.Env = append(append(os.Environ(), "BIN="+bin), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", dir, args, err, out.String(), errb.String())
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("%s %v: timed out", dir, args)
	}
	return out.String(), errb.String()
}

// machineState is what a scenario must leave as it found: loop devices,
// throttles, dirty limits, loop mounts.
func machineState(t *testing.T) string {
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

var secondsRe = regexp.MustCompile(`seconds: ([0-9.]+)`)

// seconds returns every "seconds: N" the scenario printed.
func seconds(t *testing.T, stderr string) []float64 {
	t.Helper()
	var out []float64
	for _, m := range secondsRe.FindAllStringSubmatch(stderr, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		out = append(out, v)
	}
	return out
}

// floats parses one number per line, taking each line's first field.
func floats(s string) []float64 {
	var out []float64
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}
