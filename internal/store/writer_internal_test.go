package store

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// TestCommits: rows are committed (visible to another connection, kept by a
// recorder killed now) at the first spill, then at most every FlushEvery,
// not at each spill: a second's commit is a sync of the WAL.
func TestCommits(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "rec.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(nil)
	committed := func() int {
		t.Helper()
		var n int
		if err := w.db.QueryRow("SELECT count(*) FROM cputime").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := func(n int) []event.Event {
		b := make([]event.Event, n)
		for i := range b {
			b[i] = &event.CPUTime{Header: event.Header{Time: uint64(i), TID: 1}, OnCPU: 1}
		}
		return b
	}
	// Each write as if the last flush were just now: a slow machine must
	// not reach FlushEvery in the middle.
	w.lastFlush = time.Now()
	w.Write(rows(100))
	if n := committed(); n != 0 {
		t.Fatalf("%d rows committed before any spill or FlushEvery", n)
	}
	w.lastFlush = time.Now()
	w.Write(rows(flushRows))
	if n := committed(); n != flushRows+100 {
		t.Fatalf("%d rows committed after the first spill, want all %d", n, flushRows+100)
	}
	w.lastFlush = time.Now()
	w.Write(rows(2 * flushRows))
	if n := committed(); n != flushRows+100 {
		t.Fatalf("%d rows committed after a second spill within FlushEvery, want still %d", n, flushRows+100)
	}
	if w.Err() != nil {
		t.Fatal(w.Err())
	}
}
