package store

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// fiveTables is n rows of each of five tables, in the engine's batches.
func fiveTables(n int) [][]event.Event {
	var batches [][]event.Event
	var b []event.Event
	for i := range n {
		h := event.Header{Time: uint64(i), PID: uint32(i % 97), TID: uint32(i % 1013)}
		b = append(b, &event.Syscall{Header: h, Nr: 1, Dur: uint64(i), Ret: int64(i)},
			&event.OffCPU{Header: h, Off: uint64(i)},
			&event.Sample{Header: h},
			&event.Block{Header: h, Sector: uint64(i), Bytes: 4096},
			&event.CPUTime{Header: h, OnCPU: 1})
		if len(b) >= 5000 {
			batches, b = append(batches, b), nil
		}
	}
	return append(batches, b)
}

// TestCommitOfManyTables: a second's rows of several tables need more
// memory to commit than the recording's limit (20 MB here stands for 64 MB
// against three times the tables): the commit gets room for itself, every
// row is kept, and the limit is the recording's again after.
func TestCommitOfManyTables(t *testing.T) {
	const limit = "20MB"
	w, err := create(filepath.Join(t.TempDir(), "rec.db"), limit)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(nil)
	for _, b := range fiveTables(100_000) {
		w.lastFlush = time.Now() // one second's rows
		w.Write(b)
	}
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	err = w.flushLocked()
	w.mu.Unlock()
	if err != nil {
		t.Fatalf("the second's commit: %v", err)
	}
	var n int
	var now string
	if err := w.db.QueryRow("SELECT (SELECT count(*) FROM offcpu_raw), current_setting('memory_limit')").Scan(&n, &now); err != nil {
		t.Fatal(err)
	}
	if n != 100_000 {
		t.Errorf("%d waits kept, want 100000", n)
	}
	if !strings.HasPrefix(now, "19.") { // DuckDB says 20 MB as 19.0 MiB
		t.Errorf("memory limit %s after the commit, want the recording's %s again", now, limit)
	}
}
