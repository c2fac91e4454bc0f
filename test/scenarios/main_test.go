// Package scenarios runs the seed scenarios of examples/ end to end, on the
// real kernel, through the same run.sh a person would use.
package scenarios

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

var (
	repo = harness.Repo()
	bin  string // where whyslow and slowdisk were built for this run
)

func TestMain(m *testing.M) { harness.Main(m, &bin) }

func requireRoot(t *testing.T) { harness.RequireRoot(t) }

// waitsOnly is requireRoot for a test whose programs only wait (on a
// server, a lock, a timer) and whose checks hold no CPU or run-queue time
// tightly: it changes nothing on the machine (no slow disk, cgroup or
// sysctl), so it may run beside others like it. Go runs such tests after
// every serial one has ended, -parallel at a time (make test: 3), so that
// none of them runs beside a test that changes the machine or counts CPU
// time. A test that makes a slow disk or a cgroup, or asserts CPU or
// run-queue time, stays serial: it calls requireRoot.
func waitsOnly(t *testing.T) {
	t.Helper()
	requireRoot(t)
	t.Parallel()
}

// scenario runs examples/<dir>/run.sh args... and returns stdout and stderr.
func scenario(t *testing.T, env []string, dir string, args ...string) (string, string) {
	t.Helper()
	requireRoot(t)
	harness.Unchanged(t)
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
