package store_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// TestFinishLeavesTheRecordingOpen: run and attach analyse the recording on
// the writer's own database. It must read like an opened one (metadata,
// rows), be as locked down as Open makes it, and on Close be checkpointed
// when kept (reopened with no WAL left) or not when temporary.
func TestFinishLeavesTheRecordingOpen(t *testing.T) {
	for _, temporary := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "rec.db")
		w, err := store.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.SetMeta(map[string]string{"level": "waits"}); err != nil {
			t.Fatal(err)
		}
		rec, err := w.Finish(map[string]uint64{"offcpu": 3}, temporary)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Meta["format"] != "whyslow-recording" || rec.Meta["level"] != "waits" {
			t.Errorf("temporary %v: meta %v", temporary, rec.Meta)
		}
		if n := setting(t, rec.DB, "threads"); n != "1" {
			t.Errorf("temporary %v: %s threads for a short recording's analyses, want 1", temporary, n)
		}
		var limit string
		if err := rec.DB.QueryRow("SELECT current_setting('memory_limit')").Scan(&limit); err != nil || limit != analysisLimit(t) {
			t.Errorf("temporary %v: memory limit %q (%v), want the analyses' %q, not the recorder's", temporary, limit, err, analysisLimit(t))
		}
		if lost := rec.Lost(); lost["offcpu"] != 3 {
			t.Errorf("temporary %v: lost %v, want offcpu 3", temporary, lost)
		}
		for _, q := range []string{
			"COPY (SELECT * FROM meta) TO '" + filepath.Join(dir, "out.csv") + "'",
			"SELECT * FROM read_csv('/etc/passwd')",
			"SET enable_external_access = true",
		} {
			if _, err := rec.DB.Exec(q); err == nil {
				t.Errorf("temporary %v: %s allowed", temporary, q)
			}
		}
		// An analysis may leave rows unread: the checkpoint must not wait for them.
		rows, err := rec.DB.Query("SELECT key FROM meta")
		if err != nil {
			t.Fatal(err)
		}
		rows.Next()
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		_, err = os.Stat(path + ".wal")
		if walLeft := err == nil; walLeft != temporary {
			t.Errorf("temporary %v: WAL left after close: %v", temporary, walLeft)
		}
		if !temporary {
			again, err := store.Open(path)
			if err != nil {
				t.Fatalf("reopening a kept recording: %v", err)
			}
			again.Close()
		}
	}
}

// analysisLimit is how DuckDB shows the memory limit analyses get (128MB).
func analysisLimit(t *testing.T) string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var s string
	if err := db.QueryRow("SET memory_limit = '128MB'; SELECT current_setting('memory_limit')").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func setting(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRow("SELECT current_setting('" + name + "')").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFinishGivesAnalysesTheirThreads: the recorder runs DuckDB on one
// thread; a recording with row groups to scan in parallel is analysed with
// DuckDB's default threads.
func TestFinishGivesAnalysesTheirThreads(t *testing.T) {
	w, err := store.Create(filepath.Join(t.TempDir(), "rec.db"))
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]event.Event, 0, 130_000)
	for i := range cap(batch) {
		batch = append(batch, &event.CPUTime{Header: event.Header{Time: uint64(i), TID: uint32(i % 7)}, OnCPU: 1})
	}
	w.Write(batch)
	rec, err := w.Finish(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	fresh, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got, want := setting(t, rec.DB, "threads"), setting(t, fresh, "threads"); got != want {
		t.Errorf("%s threads for the analyses, want DuckDB's default %s", got, want)
	}
}
