package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// explainBuild times `report explain` on the other shape of recording:
// the default level over a parallel build. The fio recording has millions
// of events from one process; a build has a hundred thousand from over a
// thousand threads, and it is what the critical path walks the longest
// (every hand-off between go, compile and the linker). It is also what a
// user of `whyslow run` waits for once the build has ended.
func explainBuild(w io.Writer) {
	dir, err := os.MkdirTemp("/var/tmp", "whyslow-bench-build-")
	if err != nil {
		fmt.Fprintf(w, "\nParallel build: failed: %v\n", err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "build.db")
	events, err := recordBuild(dir, path)
	if err != nil {
		fmt.Fprintf(w, "\nParallel build: recording failed: %v\n", err)
		return
	}
	threads := sqlNumber(path, "SELECT count(DISTINCT tid) FROM cputime")
	procs := sqlNumber(path, "SELECT count(DISTINCT pid) FROM cputime")
	fmt.Fprintf(w, "\nThe other shape: a default-level recording (`whyslow record -o build.db -- go build -a -p 2 ...`, cold cache) of the parallel build of section 1's realistic work: %d events from %d threads in %d processes. Median of 3, output to /dev/null; events/s as above.\n\n", events, threads, procs)
	fmt.Fprintf(w, "| command | seconds | events/s |\n|---|---:|---:|\n")
	var runs []float64
	for range 3 {
		start := time.Now()
		cmd := exec.Command(*whyslow, "report", "explain", path)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(w, "| `whyslow report explain build.db` | failed: %v | |\n", err)
			return
		}
		runs = append(runs, time.Since(start).Seconds())
	}
	el := median(runs)
	fmt.Fprintf(w, "| `whyslow report explain build.db` | %.2f | %.0f |\n", el, float64(events)/el)
}

// recordedEvents is record's own count of what it stored, from its last line.
var recordedEvents = regexp.MustCompile(`recorded (\d+) events`)

// recordBuild records the build at the default level and returns how many
// events the recording holds.
func recordBuild(dir, path string) (uint64, error) {
	argv, env := goBuild(dir)
	emptyCache(dir)
	cmd := exec.Command(*whyslow, append([]string{"record", "-o", path, "--"}, argv...)...)
	cmd.Env = append(os.Environ(), env...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, errb.String())
	}
	m := recordedEvents.FindSubmatch(errb.Bytes())
	if m == nil {
		return 0, fmt.Errorf("no count of events in %q", errb.String())
	}
	return strconv.ParseUint(string(m[1]), 10, 64)
}
