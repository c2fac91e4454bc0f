package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
)

// sqliteLoop commits one row at a time to a SQLite file for a few seconds
// and prints commits per second: an fsync-bound program, the shape of most
// databases' write path.
const sqliteLoop = `import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER, v TEXT)")
n, end = 0, time.time() + float(sys.argv[2])
start = time.time()
while time.time() < end:
    db.execute("INSERT INTO t VALUES (?, ?)", (n, "x" * 100))
    n += 1
print(n / (time.time() - start))`

// fsyncLoop writes 4 KiB and fdatasyncs it, N times, and prints the seconds
// it took: the write path of a database without the database, each commit
// a trip through the page cache, writeback, the journal and the block layer.
const fsyncLoop = `import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
buf = b"x" * 4096
start = time.time()
for i in range(int(sys.argv[2])):
    os.pwrite(fd, buf, (i % 64) * 4096)
    os.fdatasync(fd)
print(time.time() - start)`

// realistic measures the default level on work that is not a syscall storm:
// the goal there is 0.99 of untraced throughput.
func realistic(w io.Writer) {
	sqlite(w)
	timedRows(w)
}

// timedRows: programs that print how long their work took (word-pop's median
// request, the fsync loop, the build timed by a shell around it); the ratio
// is untraced time over traced time, so that 1 is free and lower is slower,
// as above. The last column is all of `whyslow run`: start-up, the work, and
// the report after it.
func timedRows(w io.Writer) {
	repo, _ := os.Getwd()
	gocache, err := os.MkdirTemp("/var/tmp", "whyslow-bench-gocache-")
	if err != nil {
		fmt.Fprintf(w, "| build | failed: %v | | | |\n", err)
		return
	}
	defer os.RemoveAll(gocache)
	buildArgv, buildEnv := goBuild(gocache)
	type work struct {
		name  string
		argv  []string
		env   []string
		print bool // the program prints its own seconds
	}
	// The fsync loop's disk: ext4 over a loop device whose file is in
	// memory, so that pairs differ by whyslow, not by the host's disk.
	py, _ := exec.LookPath("python3")
	fsyncFile := ""
	d, fsyncErr := slowdisk.Create(slowdisk.Options{Size: 512 << 20, ImageDir: "/dev/shm"})
	if fsyncErr == nil {
		defer d.Close()
		fsyncFile = filepath.Join(d.Dir, "loop.dat")
	}
	// The build is timed from inside: its own wall time, as the other rows
	// time their own work. What run does after the command (the report)
	// is the last column.
	timed := []string{"sh", "-c", `s=$(date +%s.%N); "$@" || exit 1; e=$(date +%s.%N); echo "$s $e" | awk '{print $2 - $1}'`, "timed"}
	works := []work{
		{"word-pop: median /popularity request (Flask, 1000 temp files each, on tmpfs)", []string{"sh", filepath.Join(repo, "bench", "wordpop.sh")}, nil, true},
		{"parallel build: go build -a of a net/http program, -p 2, cold cache", append(timed, buildArgv...), buildEnv, true},
	}
	if fsyncFile != "" {
		works = append(works, work{"fsync loop: 30000 × (4 KiB pwrite + fdatasync), ext4 on a loop device in memory", []string{py, "-c", fsyncLoop, fsyncFile, "30000"}, nil, true})
	}
	fmt.Fprintf(w, "\n| work | untraced s | traced s (default level) | ratio | pairs' range | `whyslow run` whole, s |\n|---|---:|---:|---:|---:|---:|\n")
	if fsyncErr != nil {
		fmt.Fprintf(w, "| fsync loop | failed: %v | | | |\n", fsyncErr)
	}
	for _, wk := range works {
		var whole []float64 // whyslow run's own wall time, the report after the command included
		measure := func(prefix ...string) (float64, error) {
			emptyCache(gocache)
			cmd := exec.Command(prefix[0], append(prefix[1:], wk.argv...)...)
			cmd.Env = append(os.Environ(), wk.env...)
			start := time.Now()
			out, err := cmd.Output()
			took := time.Since(start).Seconds()
			if err != nil {
				return 0, err
			}
			if prefix[0] == *whyslow {
				whole = append(whole, took)
			}
			if !wk.print {
				return took, nil
			}
			f := strings.Fields(string(out))
			if len(f) == 0 {
				return 0, fmt.Errorf("no time printed")
			}
			return strconv.ParseFloat(f[len(f)-1], 64)
		}
		var ratios, base, traced []float64
		failed := false
		for i := 0; i < *pairs && !failed; i++ {
			a, err := measure("env")
			if err != nil {
				fmt.Fprintf(w, "| %s | failed: %v | | | |\n", wk.name, err)
				failed = true
				break
			}
			b, err := measure(*whyslow, "run", "--linger=0", "--")
			if err != nil {
				fmt.Fprintf(w, "| %s | failed: %v | | | |\n", wk.name, err)
				failed = true
				break
			}
			base, traced, ratios = append(base, a), append(traced, b), append(ratios, a/b)
		}
		if !failed {
			fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %s | %.3f |\n", wk.name, median(base), median(traced), median(ratios), spread(ratios), median(whole))
		}
	}
}

func sqlite(w io.Writer) {
	fmt.Fprintf(w, "\n### Realistic work\n\nA SQLite commit loop (autocommit inserts, each an fsync) on %s, 3 s per run, %d A B pairs; the ratio is the median of traced/untraced commits per second. Goal: ≥ 0.99 at the default level.\n\n| tool | untraced commits/s | traced commits/s | ratio | pairs' range |\n|---|---:|---:|---:|---:|\n", "/var/tmp", *pairs)
	py, err := exec.LookPath("python3")
	if err != nil {
		fmt.Fprintf(w, "| sqlite | failed: %v | | | |\n", err)
		return
	}
	dir, err := os.MkdirTemp("/var/tmp", "whyslow-bench-sqlite-")
	if err != nil {
		fmt.Fprintf(w, "| sqlite | failed: %v | | | |\n", err)
		return
	}
	defer os.RemoveAll(dir)
	rate := func(argv ...string) (float64, error) {
		db := filepath.Join(dir, "loop.db")
		os.Remove(db)
		out, err := exec.Command(argv[0], append(argv[1:], py, "-c", sqliteLoop, db, "3")...).Output()
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(out))
		if len(f) == 0 {
			return 0, fmt.Errorf("no rate printed")
		}
		return strconv.ParseFloat(f[len(f)-1], 64)
	}
	for _, t := range []struct {
		name string
		argv []string
	}{
		{"whyslow run (default level)", []string{*whyslow, "run", "--linger=0", "--"}},
		{"whyslow run --syscalls", []string{*whyslow, "run", "--syscalls", "--linger=0", "--"}},
	} {
		var ratios, base, traced []float64
		for i := 0; i < *pairs; i++ {
			a, err := rate("env")
			if err != nil {
				fmt.Fprintf(w, "| %s | failed: %v | | | |\n", t.name, err)
				return
			}
			b, err := rate(t.argv...)
			if err != nil {
				fmt.Fprintf(w, "| %s | failed: %v | | | |\n", t.name, err)
				return
			}
			base, traced, ratios = append(base, a), append(traced, b), append(ratios, b/a)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.3f | %s |\n", t.name, median(base), median(traced), median(ratios), spread(ratios))
	}
}
