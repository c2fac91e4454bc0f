package record

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/store/damage"
	"github.com/whyslow/whyslow/test/harness"
)

// readers are the commands that open a recording, each as a function of the
// recording and a directory for its outputs.
var readers = []struct {
	name string
	args func(rec, out string) []string
}{
	{"usage-json", func(rec, _ string) []string { return []string{"report", "usage", rec, "--json"} }},
	{"explain-all", func(rec, _ string) []string { return []string{"report", "explain", rec} }},
	{"usage", func(rec, _ string) []string { return []string{"report", "usage", rec} }},
	{"stats", func(rec, _ string) []string { return []string{"report", "stats", rec, "--json"} }},
	{"freq", func(rec, _ string) []string { return []string{"report", "freq", rec} }},
	{"top", func(rec, _ string) []string { return []string{"report", "top", rec} }},
	{"log", func(rec, _ string) []string { return []string{"report", "log", rec} }},
	{"requests", func(rec, _ string) []string { return []string{"report", "requests", rec} }},
	{"html", func(rec, out string) []string {
		return []string{"report", "html", rec, "-o", filepath.Join(out, "r.html")}
	}},
	{"sql", func(rec, _ string) []string { return []string{"sql", rec, "SELECT * FROM offcpu_raw"} }},
	{"perfetto", func(rec, out string) []string {
		return []string{"export", "perfetto", rec, "-o", filepath.Join(out, "t.pftrace")}
	}},
	{"folded", func(rec, out string) []string {
		return []string{"export", "folded", rec, "-o", filepath.Join(out, "s.folded")}
	}},
	{"parquet", func(rec, out string) []string {
		return []string{"export", "parquet", rec, "-o", filepath.Join(out, "pq")}
	}},
}

// TestDamagedRecordings: a recording from elsewhere may be damaged, by
// accident or on purpose. Copies of a real recording with random bytes
// written into DuckDB's data blocks and the block checksums recomputed (the
// damage reaches DuckDB's decoders, which once crashed whyslow with a Go
// trace), and copies damaged anywhere (which DuckDB's checksums mostly
// catch), and copies cut short, go through every command that reads a recording: each ends with a
// right answer (exit 0) or one line and exit 3, never a crash, a trace or a
// hang, and leaves no partial output nor temporary files behind.
func TestDamagedRecordings(t *testing.T) {
	harness.RequireRoot(t)
	base := filepath.Join(t.TempDir(), "base.db")
	// A little of everything: files written and read, a fsync, a socket,
	// processes that fork and exit.
	work := `d=$(mktemp -d); for i in 1 2 3; do head -c 300000 /dev/urandom > $d/f$i; sync $d/f$i; cat $d/f$i > /dev/null; done;
		(echo hi | nc -q0 127.0.0.1 9 2>/dev/null || true); ls /proc > /dev/null; rm -r $d`
	if _, errs, code := whyslow(t, "record", "--full", "-o", base, "--", "sh", "-c", work); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	src, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	if !damage.Valid(src) {
		t.Fatal("the recording's own checksums do not match DuckDB's: the damage package no longer knows its layout")
	}
	if damage.Blocks(src) < 2 {
		t.Fatalf("the recording has %d data blocks: too few to damage", damage.Blocks(src))
	}
	before := duckdbTemps(t)

	type copyOf struct {
		name string
		data []byte
	}
	var copies []copyOf
	for i := range 200 {
		rng := rand.New(rand.NewPCG(uint64(i), 27))
		d := damage.Doctor(src, rng, 1+rng.IntN(64))
		if !damage.Valid(d) {
			t.Fatalf("doctored copy %d fails its checksums", i)
		}
		copies = append(copies, copyOf{fmt.Sprintf("doctored-%03d", i), d})
	}
	for i := range 40 {
		rng := rand.New(rand.NewPCG(uint64(i), 72))
		copies = append(copies, copyOf{fmt.Sprintf("scrambled-%03d", i), damage.Scramble(src, rng, 1+rng.IntN(64))})
	}

	for i := range 20 {
		rng := rand.New(rand.NewPCG(uint64(i), 99))
		copies = append(copies, copyOf{fmt.Sprintf("truncated-%03d", i), src[:rng.IntN(len(src))]})
	}

	dir := t.TempDir()
	var mu sync.Mutex
	outcomes := map[string]int{}
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, c := range copies {
		r := readers[i%len(readers)]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rec := filepath.Join(dir, c.name+".db")
			out := filepath.Join(dir, c.name+".out")
			if err := os.WriteFile(rec, c.data, 0o600); err != nil {
				t.Error(err)
				return
			}
			if err := os.Mkdir(out, 0o700); err != nil {
				t.Error(err)
				return
			}
			code, stderr := runBounded(filepath.Join(bin, "whyslow"), r.args(rec, out), 2*time.Minute)
			mu.Lock()
			outcomes[fmt.Sprintf("%s exit %d", r.name, code)]++
			if strings.Contains(stderr, "crashed the reader") {
				outcomes["crashes caught"]++
			}
			mu.Unlock()
			where := fmt.Sprintf("%s on %s", r.name, c.name)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			switch {
			case code == -1:
				t.Errorf("%s: still running after 2 minutes", where)
			case code != 0 && code != 3:
				t.Errorf("%s: exit %d, want 0 or 3: %s", where, code, firstLines(stderr))
			case code == 3 && (len(lines) != 1 || !strings.HasPrefix(lines[0], "whyslow: ")):
				t.Errorf("%s: exit 3 with %d lines on stderr, want one:\n%s", where, len(lines), firstLines(stderr))
			case code == 0 && (strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic:")):
				t.Errorf("%s: a trace on stderr:\n%s", where, firstLines(stderr))
			}
			// A failure leaves nothing; a success leaves only what was asked.
			left, _ := filepath.Glob(filepath.Join(out, "*"))
			hidden, _ := filepath.Glob(filepath.Join(out, ".*"))
			if code != 0 && len(left) > 0 {
				t.Errorf("%s: failed and left %v", where, left)
			}
			if len(hidden) > 0 {
				t.Errorf("%s: left temporary files %v", where, hidden)
			}
			os.Remove(rec)
			os.RemoveAll(out)
		}()
	}
	wg.Wait()
	t.Logf("outcomes: %v", outcomes)
	if after := duckdbTemps(t); len(after) > len(before) {
		t.Errorf("DuckDB temporary directories left behind: %d before, %d after", len(before), len(after))
	}
}

// runBounded runs a command with a deadline; its exit code is -1 when the
// deadline killed it.
func runBounded(path string, args []string, limit time.Duration) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, errb.String()
	}
	if err != nil && cmd.ProcessState == nil {
		return -2, err.Error()
	}
	return cmd.ProcessState.ExitCode(), errb.String()
}

func firstLines(s string) string {
	lines := strings.SplitN(s, "\n", 6)
	return strings.Join(lines[:min(5, len(lines))], "\n")
}

func duckdbTemps(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "whyslow-duckdb-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
