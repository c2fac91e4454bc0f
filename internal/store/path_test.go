package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPathsDuckDBWouldMisread: a path with a '?' (what follows would be
// DuckDB's options), a control character or a stray '%' is refused when a
// recording is created or opened, and nothing is made; a name with other
// unusual characters is a name like any other.
func TestPathsDuckDBWouldMisread(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"rec.db?access_mode=read_write", "a\x1b[31m.db", "tab\t.db", "50%zz.db"} {
		path := filepath.Join(dir, name)
		if w, err := Create(path); !errors.Is(err, ErrBadPath) {
			if w != nil {
				w.Close(nil)
			}
			t.Errorf("Create(%q): %v, want ErrBadPath", name, err)
		}
		if _, err := Open(path); !errors.Is(err, ErrBadPath) {
			t.Errorf("Open(%q): %v, want ErrBadPath", name, err)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("refused paths left files: %v", left)
	}
	odd := filepath.Join(dir, "a #b 50%25 é's.db")
	w, err := Create(odd)
	if err != nil {
		t.Fatalf("Create(%q): %v", odd, err)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(odd); err != nil {
		t.Errorf("the recording is not where it was asked for: %v", err)
	}
	r, err := Open(odd)
	if err != nil {
		t.Fatalf("Open(%q): %v", odd, err)
	}
	r.Close()
}
