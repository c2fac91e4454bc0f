package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// pipeline reports the capacity of what whyslow does behind the ring
// buffer (internal/capture's BenchmarkPipeline): a --full capture's records
// replayed through the spool, the decoder and the completion of stacks and
// waits, then also DuckDB's appenders, on one CPU and on all of them.
func pipeline(w io.Writer) {
	const cmdline = "go test -run '^$' -bench Pipeline -benchtime 3x ./internal/capture/"
	fmt.Fprintf(w, "\n## 2b. The pipeline's own capacity (issue 29)\n\n")
	fmt.Fprintf(w, "`%s`: dd's two million one-byte reads and writes recorded at `--full`, every record the spool took copied, then replayed as fast as it goes (median of 3 replays, in events a second). A source that keeps pace puts a block of records into the spool when it has room for it in memory, as a ring's reader does while the pipeline keeps up; the backlog row's source puts them all at once, so that most spill to the spool's file and are read back. The kernel's side is not in it: the programs and the ring cost what section 1b says. Goal: 2M events/s on one CPU through the store.\n\n", cmdline)
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "Pipeline", "-benchtime", "3x", "./internal/capture/")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(w, "The benchmark failed: %v\n\n", err)
		return
	}
	fmt.Fprintf(w, "| stage | CPUs | events/s |\n|---|---|---:|\n")
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "BenchmarkPipeline/") {
			continue
		}
		name := strings.TrimPrefix(f[0], "BenchmarkPipeline/")
		name = name[:strings.LastIndex(name, "-")] // GOMAXPROCS suffix
		rate := "?"
		for i := 1; i < len(f); i++ {
			if f[i] == "events/s" {
				rate = f[i-1]
			}
		}
		stage, cpus := "ring records → spool → decode → completion", "1"
		switch name {
		case "store":
			stage = "… → DuckDB (the recording)"
		case "store-backlog":
			stage = "… → DuckDB, a backlog through the spool's file"
		case "store-all-cpus":
			stage, cpus = "… → DuckDB (the recording)", "all"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", stage, cpus, rate)
	}
	fmt.Fprint(w, scaling)
}

// scaling says how the capacity grows with CPUs: what runs on how many.
const scaling = `
How it scales with CPUs: each ring has its reader (one per CPU for the calls, at ` + "`--syscalls`" + ` and ` + "`--full`" + `), which at ` + "`--full`" + ` copies its records into the spool (at other levels decodes them); one loader decodes the spool and one goroutine stores, DuckDB on one thread. The decode stage is the readers' and the loader's; the store stage is bound by DuckDB's appends (~0.3 µs a row: compression and the copies of its appender and row groups), which a second CPU relieves only of the Go side running beside it (the "all" row). More CPUs make the readers keep up with more rings, not the store faster: at ` + "`--full`" + ` a backlog the store cannot take waits in the spool (16 MiB in memory, the rest in its file), and, while the traced work keeps every CPU busy, the loader holds it there until a CPU is idle or the capture ends (section 1c).

`
