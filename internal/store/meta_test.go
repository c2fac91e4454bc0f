package store_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

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
