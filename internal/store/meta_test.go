package store_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// TestSetMetaReplaces: a key set again replaces its value, whether it was
// set by Create or by an earlier SetMeta, alone or beside new keys.
func TestSetMetaReplaces(t *testing.T) {
	w, err := store.Create(filepath.Join(t.TempDir(), "rec.db"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []map[string]string{
		{"a": "1"},
		{"a": "2", "b": "3"},
		{"b": "4"},
		{"schema_version": "9", "c": "5"},
	} {
		if err := w.SetMeta(kv); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := w.Finish(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	for k, want := range map[string]string{"a": "2", "b": "4", "c": "5", "schema_version": "9", "format": "whyslow-recording"} {
		if got := rec.Meta[k]; got != want {
			t.Errorf("meta %s = %q, want %q", k, got, want)
		}
	}
}

// TestSetMetaKeepsTextThatIsNotUTF8: a command line or path that is not
// UTF-8 is kept as text (event.EncodeText); DuckDB refused the statement,
// and the recording with it.
func TestSetMetaKeepsTextThatIsNotUTF8(t *testing.T) {
	w, err := store.Create(filepath.Join(t.TempDir(), "rec.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetMeta(map[string]string{"command": "./\xff\xfeprog\x00bad\xffname.dat"}); err != nil {
		t.Fatal(err)
	}
	rec, err := w.Finish(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	if got, want := rec.Meta["command"], "./\\xff\\xfeprog\x00bad\\xffname.dat"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
}

// TestOtherVersionRefused: a recording of another schema version is not
// read (its tables are not what the analyses query): one line that names
// its version and the whyslow that made it, and not-a-recording (exit 3).
func TestOtherVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetMeta(map[string]string{"schema_version": "1", "whyslow_version": "v0.1.0-old"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	_, err = store.Open(path)
	if !errors.Is(err, store.ErrNotRecording) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "version 1 recording") || !strings.Contains(err.Error(), "v0.1.0-old") {
		t.Errorf("opening a version 1 recording: %v", err)
	}
}

// TestVersion3Read: a recording of schema version 3, whose syscall_raw was
// a table of the shape version 4's view gives, is read as one of version 4.
func TestVersion3Read(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v3.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := event.Header{Time: 10, PID: 1, TID: 2, Comm: "cp"}
	w.Write([]event.Event{
		&event.Syscall{Header: h, Dur: 5, Ret: 4096, FD: 3, FD2: 4, Nr: 326, File: event.FileRef{Dev: 1, Ino: 2},
			File2: event.FileRef{Dev: 1, Ino: 3}}, // copy_file_range
		&event.Syscall{Header: event.Header{Time: 20, PID: 1, TID: 2, Comm: "cp"}, Dur: 5, Ret: 1, FD: 3, FD2: -1, Nr: 0},
	})
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	// Version 3 as it was: syscall_raw a table, no syscall_packed.
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE v3 AS SELECT * FROM syscall_raw; DROP VIEW syscall_raw; ALTER TABLE v3 RENAME TO syscall_raw;
	  DROP TABLE syscall_packed; DROP TABLE syscall_second_file; UPDATE meta SET value = '3' WHERE key = 'schema_version'`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := store.Open(path)
	if err != nil {
		t.Fatalf("opening a version 3 recording: %v", err)
	}
	defer rec.Close()
	var got []string
	rows, err := rec.DB.Query("SELECT name || ' ' || fd2 || ' ' || ino2 FROM syscalls ORDER BY ts")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		got = append(got, s)
	}
	rows.Close()
	if want := []string{"copy_file_range 4 3", "read -1 0"}; !slices.Equal(got, want) {
		t.Errorf("syscalls of a version 3 recording: %q, want %q", got, want)
	}
}
