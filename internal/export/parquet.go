package export

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/whyslow/whyslow/internal/store"
)

// ParquetFile is one table or view written as Parquet.
type ParquetFile struct {
	Name string // the table or view
	Path string
	Rows int64
}

// plainName is what a table or view name must look like to become a file
// name: a recording is a file anyone could have crafted.
var plainName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// NoteTemp is told of the directory Parquet writes into before the files
// are put in place: a guard around a reader that may crash removes it (cli).
var NoteTemp = func(path string) {}

// Parquet writes every table and view of the recording at path as
// dir/NAME.parquet (dir is created if needed; existing files are never
// overwritten), with DuckDB's COPY ... TO (FORMAT parquet). The files are
// written into a hidden directory inside dir and linked into place only
// when every one is whole: a failure (a damaged table, a full disk) leaves
// dir as it was, and removes it if it made it.
func Parquet(path, dir string) (files []ParquetFile, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	stage := filepath.Join(abs, fmt.Sprintf(".whyslow-parquet-%d-%d", os.Getpid(), rand.Uint32()))
	rec, err := store.OpenWritingTo(path, stage+string(filepath.Separator))
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	names, err := relations(rec)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		NoteTemp(abs) // made here: a crash's guard removes it whole (what it holds is ours)
		defer func() {
			if err != nil {
				os.Remove(abs) // made here, and empty again
			}
		}()
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	NoteTemp(stage)
	if err := os.Mkdir(stage, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	defer os.RemoveAll(stage) // after rec.Close (deferred later, run first)
	for _, name := range names {
		f := ParquetFile{Name: name, Path: filepath.Join(abs, name+".parquet")}
		if _, err := os.Lstat(f.Path); err == nil {
			return nil, fmt.Errorf("%s %w: choose another directory or remove it", f.Path, store.ErrExists)
		}
		staged := filepath.Join(stage, name+".parquet")
		// Identifiers and the file name cannot be parameters of COPY: the
		// name is checked above, the path quoted as a string literal.
		q := fmt.Sprintf(`COPY (SELECT * FROM "%s") TO '%s' (FORMAT parquet)`, name, strings.ReplaceAll(staged, "'", "''"))
		if _, err := rec.DB.Exec(q); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f.Path, err)
		}
		if err := os.Chmod(staged, 0o600); err != nil { // it holds paths and command lines
			return nil, fmt.Errorf("writing %s: %w", f.Path, err)
		}
		if err := rec.DB.QueryRow(fmt.Sprintf(`SELECT count(*) FROM "%s"`, name)).Scan(&f.Rows); err != nil {
			return nil, fmt.Errorf("counting %s: %w", name, err)
		}
		files = append(files, f)
	}
	// Into place: a link fails, rather than replace, if a name was taken
	// meanwhile; then what was linked goes again.
	for i, f := range files {
		if err := os.Link(filepath.Join(stage, f.Name+".parquet"), f.Path); err != nil {
			for _, done := range files[:i] {
				os.Remove(done.Path)
			}
			if errors.Is(err, fs.ErrExist) {
				err = fmt.Errorf("%s %w: choose another directory or remove it", f.Path, store.ErrExists)
			}
			return nil, err
		}
	}
	return files, nil
}

// relations lists the recording's tables and views as a reader sees them,
// tables first: its own, and the temporary ones a reader makes of the same
// names or in addition (the derived tables; an older version's tables and
// views in this version's shape, store/versions.go), so that exports of
// recordings of every version have the same files and columns.
func relations(rec *store.Recording) ([]string, error) {
	rows, err := rec.DB.Query(`SELECT table_name FROM (
	    SELECT table_name, 0 AS k FROM duckdb_tables() WHERE schema_name = 'main'
	    UNION ALL SELECT view_name, 1 FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal)
	  GROUP BY table_name ORDER BY min(k), table_name`)
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		if !plainName.MatchString(n) {
			return nil, fmt.Errorf("table %q: %w (unexpected name)", n, store.ErrNotRecording)
		}
		if store.IsPacked(n) {
			continue // its rows are its view's, exported unpacked
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the recording has no tables")
	}
	return out, nil
}
