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

// TestTemporaryRecordingsCommitLessOften: a temporary recording commits
// every TemporaryCommitEvery, not every FlushEvery; a kept one commits once
// FlushEvery has passed.
func TestTemporaryRecordingsCommitLessOften(t *testing.T) {
	for _, temporary := range []bool{false, true} {
		w, err := Create(filepath.Join(t.TempDir(), "rec.db"))
		if err != nil {
			t.Fatal(err)
		}
		if temporary {
			w.CommitEvery(TemporaryCommitEvery)
		}
		ev := []event.Event{&event.CPUTime{Header: event.Header{Time: 1, TID: 1}, OnCPU: 1}}
		// A flush as long ago as FlushEvery and a bit, then one row.
		w.lastFlush = time.Now().Add(-FlushEvery - time.Millisecond)
		w.Write(ev)
		var n int
		if err := w.db.QueryRow("SELECT count(*) FROM cputime").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 1, true: 0}[temporary]; n != want {
			t.Errorf("temporary %v: %d rows committed after FlushEvery, want %d", temporary, n, want)
		}
		w.lastFlush = time.Now().Add(-TemporaryCommitEvery - time.Millisecond)
		w.Write(ev)
		if err := w.db.QueryRow("SELECT count(*) FROM cputime").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{false: 2, true: 2}[temporary]; n != want {
			t.Errorf("temporary %v: %d rows committed after TemporaryCommitEvery, want %d", temporary, n, want)
		}
		w.Close(nil)
	}
}
