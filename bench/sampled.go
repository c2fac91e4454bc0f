package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// sampled measures the sampled capture's own cost (issue 51: under 1% of
// a CPU at 20 Hz with 1,000 threads): whyslow attach --sampler proc on a
// process of N threads, each in a wait of its own, or each in a new wait
// at every look. The cost is whyslow's CPU time (user + system, its
// rusage: the looks, the store and the explanation at the end) over the
// capture's duration.
func sampled(w io.Writer) {
	const secs = 10
	fmt.Fprintf(w, "\n## 10. The sampled capture's cost (issue 51)\n\n`whyslow attach -p PID -d %ds --sampler proc` (run as root: stacks read too; without root each look is cheaper), the target a Python process of N threads: *idle*, each blocked on an Event (one wait for the whole capture); *busy*, each sleeping 10 ms in a loop (a new wait at every look: its stat, syscall, wait channel and stack read each time). Cost: whyslow's CPU time (user + system, rusage: the looks, the recording, the explanation at its end) over the %d s. *looks*: rows of `proc_samples` (a thread asleep for half a second is looked at less often, down to once a second: fewer looks than ticks × threads). Goal: under 1%% of a CPU at 20 Hz with 1,000 threads.\n\n| threads | load | Hz | looks | whyslow CPU s | %% of a CPU |\n|---:|---|---:|---:|---:|---:|\n", secs, secs)
	for _, c := range []struct {
		threads int
		load    string
		hz      int
	}{{1000, "idle", 20}, {1000, "busy", 20}, {100, "idle", 20}, {1000, "idle", 100}} {
		cpu, looks, err := sampledCost(c.threads, c.load, c.hz, secs)
		if err != nil {
			fmt.Fprintf(w, "| %d | %s | %d | | failed: %v | |\n", c.threads, c.load, c.hz, err)
			continue
		}
		fmt.Fprintf(w, "| %d | %s | %d | %s | %.2f | %.2f%% |\n", c.threads, c.load, c.hz, looks, cpu.Seconds(), 100*cpu.Seconds()/secs)
	}
}

func sampledCost(threads int, load string, hz, secs int) (time.Duration, string, error) {
	body := "ev.wait()"
	if load == "busy" {
		body = "while not ev.is_set(): time.sleep(0.01)"
	}
	prog := fmt.Sprintf("import threading, time, sys\nev = threading.Event()\nthreading.stack_size(64 * 1024)\n"+
		"def f():\n %s\nfor _ in range(%d): threading.Thread(target=f, daemon=True).start()\nprint('ready', flush=True)\ntime.sleep(%d)\nev.set()\n",
		body, threads-1, secs+30)
	target := exec.Command("python3", "-c", prog)
	out, err := target.StdoutPipe()
	if err != nil {
		return 0, "", err
	}
	if err := target.Start(); err != nil {
		return 0, "", err
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	buf := make([]byte, 16)
	if n, _ := out.Read(buf); !strings.HasPrefix(string(buf[:n]), "ready") {
		return 0, "", fmt.Errorf("the target did not start its threads")
	}
	rec := filepath.Join(work, "sampled.db")
	os.Remove(rec)
	defer os.Remove(rec)
	cmd := exec.Command(*whyslow, "attach", "-p", fmt.Sprint(target.Process.Pid), "-d", fmt.Sprintf("%ds", secs),
		"--sampler", "proc", "--hz", fmt.Sprint(hz), "-o", rec)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return 0, "", fmt.Errorf("%v: %s", err, errb.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, "", fmt.Errorf("no rusage")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	looks, _ := exec.Command(*whyslow, "sql", rec, "SELECT count(*) FROM proc_samples_raw", "--format", "csv").Output()
	l := strings.Fields(string(looks))
	return cpu, l[len(l)-1], nil
}
