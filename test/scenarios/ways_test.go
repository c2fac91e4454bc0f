package scenarios

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// The ways whyslow is asked about a client: run at each capture level,
// attach to it while it waits, and report explain --pid on a system-wide
// recording. The explanation of a wait across processes must not depend on
// the way (issue 24).

// explainWays calls check with the explanation of each way. start starts
// the client (after setup, each time) and returns it started.
func explainWays(t *testing.T, setup func(t *testing.T), client []string, check func(t *testing.T, x *explanation, log string)) {
	for _, level := range []string{"", "--syscalls", "--full"} {
		name := "run " + level
		t.Run(name, func(t *testing.T) {
			setup(t)
			var flags []string
			if level != "" {
				flags = []string{level}
			}
			x, log := runExplainedAt(t, flags, client...)
			check(t, x, log)
		})
	}
	t.Run("attach", func(t *testing.T) {
		setup(t)
		c := exec.Command(client[0], client[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Wait()
		time.Sleep(300 * time.Millisecond) // waiting already: a wait begun before capture
		x, log := attachExplained(t, c.Process.Pid, 10*time.Second)
		check(t, x, log)
	})
	t.Run("system-wide record", func(t *testing.T) {
		rec := filepath.Join(t.TempDir(), "all.db")
		r := exec.Command(filepath.Join(bin, "whyslow"), "record", "-o", rec, "-d", "60s")
		rerr := harness.StartRecorder(t, r)
		setup(t)
		c := exec.Command(client[0], client[1:]...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", client, err, out)
		}
		harness.StopRecorder(t, r, rerr, 300*time.Millisecond)
		js := filepath.Join(t.TempDir(), "explain.json")
		out, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "explain", rec, "--pid", strconv.Itoa(c.Process.Pid), "--json").Output()
		if err != nil {
			t.Fatalf("report explain --pid: %v", err)
		}
		text, _ := exec.Command(filepath.Join(bin, "whyslow"), "report", "explain", rec, "--pid", strconv.Itoa(c.Process.Pid)).CombinedOutput()
		if err := os.WriteFile(js, out, 0o600); err != nil {
			t.Fatal(err)
		}
		check(t, readExplanation(t, js, string(text)), string(text))
		if t.Failed() {
			// What the chain is built from, for a failure seen only in CI.
			waits, _ := exec.Command(filepath.Join(bin, "whyslow"), "sql", rec, fmt.Sprintf(
				"SELECT ts, off_ns, tid, reason, syscall, waker_pid, waker_tid, waker_comm, waker_side, outside FROM offcpu WHERE pid = %d AND off_ns > 10000000 ORDER BY ts",
				c.Process.Pid)).CombinedOutput()
			t.Logf("the client's long waits:\n%s\nthe recorder said: %s", waits, rerr)
		}
	})
}

// runExplainedAt is runExplained with capture flags (--syscalls, --full).
func runExplainedAt(t *testing.T, flags []string, args ...string) (*explanation, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "run.json")
	all := append(append([]string{"run", "--linger", "0", "--json", js}, flags...), "--")
	cmd := exec.Command(filepath.Join(bin, "whyslow"), append(all, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("whyslow run %v %v: %v\n%s", flags, args, err, errb.String())
	}
	return readExplanation(t, js, errb.String()), errb.String()
}
