package store_test

import (
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// TestReasonsDerivedFromFacts: the offcpu view's reason is derived from the
// facts offcpu_raw keeps, by the reader: a reader's rules name a wait even
// when the recording's own wait_reasons says otherwise (as a recording made
// before a rule changed would).
func TestReasonsDerivedFromFacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := func(ts uint64, pid uint32) event.Header {
		return event.Header{Time: ts, PID: pid, TID: pid, Comm: "c"}
	}
	w.Write([]event.Event{
		// a writer throttled: told by its stack
		&event.OffCPU{Header: h(10, 1), Off: 5, State: 'D', StackID: 3, Syscall: 1,
			Stack: []string{"schedule", "io_schedule_timeout", "balance_dirty_pages", "ext4_buffered_write_iter"}},
		// polls without a stack: process 2 used a TCP socket (a call of its
		// seen later, order does not matter), process 3 none
		&event.OffCPU{Header: h(20, 2), Off: 5, State: 'S', StackID: -1, Syscall: 7, WakerSyscall: -1},
		&event.OffCPU{Header: h(30, 3), Off: 5, State: 'S', StackID: -1, Syscall: 7, WakerSyscall: -1},
		&event.Syscall{Header: h(40, 2), Nr: 45, FD: 3, File: event.FileRef{Dev: 1, Ino: 2, Kind: event.KindSocketInet}},
		// a poll another process ended with kill(): a lock (PostgreSQL's latch)
		&event.OffCPU{Header: h(50, 3), Off: 5, State: 'S', StackID: -1, Syscall: 7, WakerPID: 9, WakerTID: 9, WakerSyscall: 62},
		// a read of a pipe, no stack: told by the file's kind
		&event.OffCPU{Header: h(60, 3), Off: 5, State: 'S', StackID: -1, Syscall: 0, FileKind: event.KindPipe, WakerSyscall: -1},
	})
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	want := [][]any{{"dirty-throttle"}, {"network"}, {"ipc"}, {"lock"}, {"ipc"}}
	read := func() [][]any {
		rec, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Close()
		return queryRows(t, rec, "SELECT reason FROM offcpu ORDER BY ts")
	}
	if got := read(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reasons:\n got %s\nwant %s", show(got), show(want))
	}
	// The recording's own answer, made wrong: the reader derives its own.
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := db.QueryRow("SELECT count(*) FROM wait_reasons").Scan(&stored); err != nil || stored != len(want) {
		t.Errorf("the recording's wait_reasons: %d rows (%v), want %d", stored, err, len(want))
	}
	if _, err := db.Exec("UPDATE wait_reasons SET reason = 'sleep'; DELETE FROM socket_users"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := read(); !reflect.DeepEqual(got, want) {
		t.Errorf("reasons with the recording's table changed:\n got %s\nwant %s", show(got), show(want))
	}
}

// TestQuotaFactFoundOrNot: a runnable wait held off by its cgroup's quota
// is cpu-quota where offcpu_raw has the quota column; a recording made
// before it (version 4) has none, and its waits were never throttled.
func TestQuotaFactFoundOrNot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]event.Event{&event.OffCPU{Header: event.Header{Time: 10, PID: 1, TID: 1, Comm: "c"}, Off: 5, Runq: 5,
		State: 'R', StackID: -1, Syscall: -1, WakerSyscall: -1, Quota: true}})
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	reasons := func() [][]any {
		rec, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Close()
		return queryRows(t, rec, "SELECT reason FROM wait_reasons")
	}
	if got, want := reasons(), [][]any{{"cpu-quota"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reasons with the quota column: %s, want %s", show(got), show(want))
	}
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE v4 AS SELECT * EXCLUDE (quota) FROM offcpu_raw; DROP VIEW offcpu; DROP TABLE offcpu_raw;
	  ALTER TABLE v4 RENAME TO offcpu_raw; UPDATE meta SET value = '4' WHERE key = 'schema_version'`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(), [][]any{{"runqueue"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reasons without the quota column: %s, want %s", show(got), show(want))
	}
}
