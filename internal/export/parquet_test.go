package export

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest/hostile"
)

func TestParquetRowCountsEqualTheRecording(t *testing.T) {
	// Parquet opens the recording itself, with its own settings: before the
	// test opens it (DuckDB shares one instance per file in a process).
	path := hostile.Build(t, t.TempDir())
	// A directory name that needs quoting in SQL.
	dir := filepath.Join(t.TempDir(), "it's parquet")
	files, err := Parquet(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ParquetFile{}
	for _, f := range files {
		byName[f.Name] = f
	}
	for _, want := range []string{"meta", "syscall_raw", "offcpu_raw", "stacks", "block_raw", "payloads", "devices",
		"syscalls", "offcpu", "block", "io", "disk", "file_names", "threads", "processes", "unlinks", "uring_io"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("%s was not exported (got %d files)", want, len(files))
		}
	}
	// A packed table's rows are exported once, unpacked, as its view's.
	if _, ok := byName["syscall_packed"]; ok {
		t.Error("syscall_packed was exported beside syscall_raw, its rows twice")
	}
	// A second export into the same directory overwrites nothing.
	if _, err := Parquet(path, dir); !errors.Is(err, store.ErrExists) {
		t.Errorf("exporting over existing files: %v, want ErrExists", err)
	}
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	src := rec
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nonEmpty := 0
	for _, f := range files {
		var recorded, back int64
		if err := src.DB.QueryRow(`SELECT count(*) FROM "` + f.Name + `"`).Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT count(*) FROM read_parquet(?)", f.Path).Scan(&back); err != nil {
			t.Fatalf("reading %s back: %v", f.Path, err)
		}
		if back != recorded || f.Rows != recorded {
			t.Errorf("%s: %d rows read back, %d reported, %d in the recording", f.Name, back, f.Rows, recorded)
		}
		if back > 0 {
			nonEmpty++
		}
		if st, err := os.Stat(f.Path); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v: others must not read it", f.Path, err, st.Mode())
		}
	}
	if nonEmpty < 10 {
		t.Errorf("only %d exported tables hold rows: the fixture should fill more", nonEmpty)
	}
	// Values survive: the hostile path comes back as it was.
	var p string
	if err := db.QueryRow("SELECT path FROM read_parquet(?) WHERE kind = 'file'", byName["files"].Path).Scan(&p); err != nil || p != "/data/out;<script>alert(1)</script>.bin" {
		t.Errorf("files.path read back as %q, %v", p, err)
	}
}

func TestParquetWritesNowhereElse(t *testing.T) {
	path := hostile.Build(t, t.TempDir())
	dir := t.TempDir()
	rec, err := store.OpenWritingTo(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	outside := filepath.Join(t.TempDir(), "x.parquet")
	if _, err := rec.DB.Exec("COPY (SELECT 1) TO '" + outside + "' (FORMAT parquet)"); err == nil {
		t.Errorf("a query wrote %s, outside the export directory", outside)
	}
	if _, err := rec.DB.Exec("SET enable_external_access = true"); err == nil {
		t.Error("the configuration must stay locked")
	}
}

// TestParquetLeavesNothingOnFailure: an export that fails part way (here a
// file already there for one of the last views) writes none of its files,
// touches the one there, and leaves no hidden directory; a directory it
// made for an export that fails is removed. It used to leave the tables
// written before the failure (29 of 36).
func TestParquetLeavesNothingOnFailure(t *testing.T) {
	path := hostile.Build(t, t.TempDir())
	dir := t.TempDir()
	there := filepath.Join(dir, "uring_io.parquet") // a view: written after every table
	if err := os.WriteFile(there, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Parquet(path, dir); !errors.Is(err, store.ErrExists) {
		t.Fatalf("exporting beside a file of the same name: %v, want ErrExists", err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "uring_io.parquet" {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		t.Errorf("a failed export left %v beside the file that was there", names)
	}
	if b, _ := os.ReadFile(there); string(b) != "mine" {
		t.Errorf("the file that was there changed: %q", b)
	}
	// A directory it made: gone again when the export fails.
	made := filepath.Join(t.TempDir(), "new")
	if _, err := Parquet(filepath.Join(t.TempDir(), "missing.db"), made); err == nil {
		t.Fatal("exporting a missing recording succeeded")
	}
	if _, err := os.Stat(made); !os.IsNotExist(err) {
		t.Errorf("a failed export left the directory it made: %v", err)
	}
}
