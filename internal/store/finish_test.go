package store_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"reflect"
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

// TestFinishKnowsWhatItFilled: the recording Finish leaves open says which
// tables hold rows (an analysis skips its steps over the others without
// asking), as its tables do, and the reasons the writer derived with that
// knowledge, asking nothing of the empty tables, are a reader's.
func TestFinishKnowsWhatItFilled(t *testing.T) {
	for _, waits := range []bool{true, false} {
		w, err := store.Create(filepath.Join(t.TempDir(), "rec.db"))
		if err != nil {
			t.Fatal(err)
		}
		h := func(ts uint64, pid uint32) event.Header {
			return event.Header{Time: ts, PID: pid, TID: pid, Comm: "c"}
		}
		batch := []event.Event{&event.Fork{Header: h(5, 1), ChildPID: 2, ChildTID: 2}}
		var want [][]any
		if waits {
			batch = append(batch,
				&event.OffCPU{Header: h(10, 1), Off: 5, State: 'D', StackID: 3, Syscall: 1,
					Stack: []string{"schedule", "io_schedule_timeout", "balance_dirty_pages", "ext4_buffered_write_iter"}},
				// polls: process 2 used a TCP socket (seen in a sample), 3 none
				&event.OffCPU{Header: h(20, 2), Off: 5, State: 'S', StackID: -1, Syscall: 7, WakerSyscall: -1},
				&event.OffCPU{Header: h(30, 3), Off: 5, State: 'S', StackID: -1, Syscall: 7, WakerSyscall: -1},
				&event.Sample{Header: h(40, 2), Syscall: 45, File: event.FileRef{Dev: 1, Ino: 2, Kind: event.KindSocketInet}})
			want = [][]any{{"dirty-throttle"}, {"network"}, {"ipc"}}
		}
		w.Write(batch)
		rec, err := w.Finish(nil, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"forks", "offcpu_raw", "samples", "stacks", "syscall_raw", "syscall_totals_raw", "block_raw", "uring_raw", "existing", "dirtied", "unlink_raw"} {
			var has bool
			if err := rec.DB.QueryRow("SELECT EXISTS (SELECT 1 FROM " + table + ")").Scan(&has); err != nil {
				t.Fatal(err)
			}
			if rec.Filled[table] != has {
				t.Errorf("waits %v: Filled says %s holds rows %v, it does %v", waits, table, rec.Filled[table], has)
			}
		}
		if got := queryRows(t, rec, "SELECT reason FROM offcpu ORDER BY ts"); !reflect.DeepEqual(got, want) {
			t.Errorf("waits %v: reasons\n got %s\nwant %s", waits, show(got), show(want))
		}
		rec.Close()
	}
}
