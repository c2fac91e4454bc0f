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
)

// watchCost measures `whyslow watch` left running beside work, by the method
// of the overhead rows: A B pairs, A untraced, B with a system-wide capture
// started beside it (watch, or `record` at the default level for
// comparison), on the fio worst case (cached 4 KiB reads, the syscall storm
// the default level must leave alone) and a realistic row (the SQLite commit
// loop). The last column is the watch's resident memory when it stopped.
func watchCost(w io.Writer) {
	fmt.Fprintf(w, "\n## 8. Leaving it running: `whyslow watch`\n\nEach system-wide capture is started beside the work (1.5 s before it, to load), then stopped; %d A B pairs, alternating; the ratio is the median of traced/untraced throughput. `record` system-wide at the default level is the comparison: watch captures the same, keeps it in memory and follows triggers.\n\n", max(*pairs, defaultPairs))
	fmt.Fprint(w, "| work | beside it | untraced | traced | ratio | pairs' range | capture's RSS at the end |\n|---|---|---:|---:|---:|---:|---:|\n")
	dir, err := os.MkdirTemp(work, "watch-")
	if err != nil {
		fmt.Fprintf(w, "| watch | failed: %v | | | | | |\n", err)
		return
	}
	captures := []struct {
		name string
		argv func(i int) []string
	}{
		{"`watch`", func(i int) []string {
			return []string{*whyslow, "watch", "--dir", filepath.Join(dir, "inc"), "--stall", "0"}
		}},
		{"`watch --requests`", func(i int) []string {
			return []string{*whyslow, "watch", "--requests", "--dir", filepath.Join(dir, "inc"), "--stall", "0"}
		}},
		{"`record` (default level)", func(i int) []string {
			rec := filepath.Join(dir, fmt.Sprintf("rec-%d.db", i))
			os.Remove(rec)
			return []string{*whyslow, "record", "-o", rec}
		}},
	}
	py, _ := exec.LookPath("python3")
	works := []struct {
		name string
		run  func() (float64, error)
	}{
		{"fio randread, 2 jobs (IOPS)", func() (float64, error) { return fio(fioJobs("randread", *runtimeS, 2), "randread") }},
		{"fio randread, 1 job (IOPS)", func() (float64, error) { return fio(fioJobs("randread", *runtimeS, 1), "randread") }},
		{"SQLite commit loop on /var/tmp (commits/s)", func() (float64, error) {
			db := filepath.Join("/var/tmp", "whyslow-bench-watch.db")
			defer os.Remove(db)
			defer os.Remove(db + "-journal")
			out, err := exec.Command(py, "-c", sqliteLoop, db, "3").Output()
			if err != nil {
				return 0, err
			}
			return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		}},
	}
	n := max(*pairs, defaultPairs)
	for _, wk := range works {
		for _, c := range captures {
			var ratios, base, traced []float64
			var rss int64
			failed := ""
			for i := range n {
				a, err := wk.run()
				if err != nil {
					failed = err.Error()
					break
				}
				b, kb, err := beside(c.argv(i), wk.run)
				if err != nil {
					failed = err.Error()
					break
				}
				rss = max(rss, kb)
				base, traced, ratios = append(base, a), append(traced, b), append(ratios, b/a)
			}
			if failed != "" {
				fmt.Fprintf(w, "| %s | %s | failed: %s | | | | |\n", wk.name, c.name, failed)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %.0f | %.3f | %s | %.0f MiB |\n", wk.name, c.name, median(base), median(traced), median(ratios), spread(ratios), float64(rss)/1024)
		}
	}
	os.RemoveAll(dir)
}

// beside runs work while a capture runs beside it, and returns the work's
// result and the capture's resident memory (KiB) as it stopped.
func beside(argv []string, work func() (float64, error)) (float64, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer cmd.Wait()
	defer cmd.Process.Signal(os.Interrupt)
	// Loaded and attached: the programs' load is whyslow's start-up, not
	// the work's cost.
	sleepMS(1500)
	v, err := work()
	rss := vmRSS(cmd.Process.Pid)
	if rss == 0 && err == nil {
		err = fmt.Errorf("whyslow %s ended before the work did", argv[1])
	}
	return v, rss, err
}

// vmRSS is a process's resident memory now, KiB.
func vmRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func sleepMS(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }
