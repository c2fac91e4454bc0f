package storetest

import (
	"database/sql"
	"embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/store"
)

// older holds, for each earlier version whyslow reads, the SQL that turns
// a recording of the version after it into one of it, as that version's
// whyslow wrote it: older/versionN.sql.
//
//go:embed older/*.sql
var older embed.FS

// Older copies the recording at path into a recording of schema version
// version (one whyslow reads: store.SchemaVersion or earlier), each version
// undone in turn from this one, and returns the copy's path. It fails the
// test when the recording holds a fact that version could not hold: the
// copy would then tell another story.
func Older(t testing.TB, path string, version int) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), fmt.Sprintf("%s.v%d.db", strings.TrimSuffix(filepath.Base(path), ".db"), version))
	if err := copyFile(path, out); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for v := store.SchemaVersion - 1; v >= version; v-- {
		q, err := older.ReadFile(fmt.Sprintf("older/version%d.sql", v))
		if err != nil {
			t.Fatalf("making a version %d recording: %v", v, err)
		}
		if _, err := db.Exec(string(q)); err != nil {
			t.Fatalf("making %s a version %d recording: %v", path, v, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
