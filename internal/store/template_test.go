package store

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
)

// withTemplateDir points the empty recording at a directory of the test's.
func withTemplateDir(t *testing.T) string {
	dir := t.TempDir()
	saved := TemplateDir
	TemplateDir = dir
	t.Cleanup(func() { TemplateDir = saved })
	return dir
}

// createAndFinish makes a recording at path and reads its metadata back.
func createAndFinish(t *testing.T, path string) map[string]string {
	t.Helper()
	w, err := Create(path)
	if err != nil {
		t.Fatalf("creating %s: %v", path, err)
	}
	if err := w.SetMeta(map[string]string{"command": "true"}); err != nil {
		t.Fatal(err)
	}
	rec, err := w.Finish(nil, false)
	if err != nil {
		t.Fatalf("finishing %s: %v", path, err)
	}
	defer rec.Close()
	return rec.Meta
}

// markTemplate adds a row to the template's meta, so that a recording
// made from it is told apart from one made from scratch.
func markTemplate(t *testing.T, path string) {
	t.Helper()
	c, err := duckdb.NewConnector(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	if _, err := db.Exec("INSERT INTO meta VALUES ('copied_from', 'template'); CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	c.Close()
}

// TestRecordingFromTemplate: the first recording leaves the empty one
// behind, private; the next is a copy of it, and a recording all the same.
func TestRecordingFromTemplate(t *testing.T) {
	dir := withTemplateDir(t)
	first := createAndFinish(t, filepath.Join(t.TempDir(), "first.db"))
	tmpl := templatePath(dir)
	st, err := os.Stat(tmpl)
	if err != nil {
		t.Fatalf("no template after the first recording: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("template mode %v, want 0600", st.Mode().Perm())
	}
	markTemplate(t, tmpl)
	second := createAndFinish(t, filepath.Join(t.TempDir(), "second.db"))
	if second["copied_from"] != "template" {
		t.Fatalf("the second recording was not copied from the template: meta %v", second)
	}
	for _, k := range []string{"schema_version", "format", "command"} {
		if first[k] != second[k] {
			t.Errorf("meta %s: %q from scratch, %q from the template", k, first[k], second[k])
		}
	}
}

// TestTemplateNotPrivateIsIgnored: a template another user could have
// written is not copied.
func TestTemplateNotPrivateIsIgnored(t *testing.T) {
	dir := withTemplateDir(t)
	createAndFinish(t, filepath.Join(t.TempDir(), "first.db"))
	tmpl := templatePath(dir)
	markTemplate(t, tmpl)
	if err := os.Chmod(tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	if meta := createAndFinish(t, filepath.Join(t.TempDir(), "second.db")); meta["copied_from"] != "" {
		t.Fatal("a template readable by others was copied")
	}
}

// TestDamagedTemplateIsReplaced: a template DuckDB cannot open costs the
// recording nothing: it is made from scratch, and so is a new template.
func TestDamagedTemplateIsReplaced(t *testing.T) {
	dir := withTemplateDir(t)
	tmpl := templatePath(dir)
	if err := os.WriteFile(tmpl, []byte("not a database, but a file of the template's name"), 0o600); err != nil {
		t.Fatal(err)
	}
	meta := createAndFinish(t, filepath.Join(t.TempDir(), "rec.db"))
	if meta["format"] != "whyslow-recording" {
		t.Fatalf("recording made beside a damaged template: meta %v", meta)
	}
	// The template was dropped and made again: the next recording copies it.
	markTemplate(t, tmpl)
	if meta := createAndFinish(t, filepath.Join(t.TempDir(), "next.db")); meta["copied_from"] != "template" {
		t.Fatalf("the template was not made again: meta %v", meta)
	}
}
