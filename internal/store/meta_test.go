package store_test

import (
	"path/filepath"
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
