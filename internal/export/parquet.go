package export

import (
	"errors"
	"fmt"
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

// Parquet writes every table and view of the recording at path as
// dir/NAME.parquet (dir is created if needed; existing files are never
// overwritten), with DuckDB's COPY ... TO (FORMAT parquet).
func Parquet(path, dir string) ([]ParquetFile, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", dir, err)
	}
	rec, err := store.OpenWritingTo(path, abs+string(filepath.Separator))
	if err != nil {
		return nil, err
	}
	defer rec.Close()
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	names, err := relations(rec)
	if err != nil {
		return nil, err
	}
	files := make([]ParquetFile, 0, len(names))
	for _, name := range names {
		f := ParquetFile{Name: name, Path: filepath.Join(abs, name+".parquet")}
		if _, err := os.Lstat(f.Path); err == nil {
			return files, fmt.Errorf("%s %w: choose another directory or remove it", f.Path, store.ErrExists)
		}
		// Identifiers and the file name cannot be parameters of COPY: the
		// name is checked above, the path quoted as a string literal.
		q := fmt.Sprintf(`COPY (SELECT * FROM "%s") TO '%s' (FORMAT parquet)`, name, strings.ReplaceAll(f.Path, "'", "''"))
		if _, err := rec.DB.Exec(q); err != nil {
			return files, fmt.Errorf("writing %s: %w", f.Path, err)
		}
		if err := os.Chmod(f.Path, 0o600); err != nil { // it holds paths and command lines
			return files, fmt.Errorf("writing %s: %w", f.Path, err)
		}
		if err := rec.DB.QueryRow(fmt.Sprintf(`SELECT count(*) FROM "%s"`, name)).Scan(&f.Rows); err != nil {
			return files, fmt.Errorf("counting %s: %w", name, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// relations lists the recording's tables and views, tables first.
func relations(rec *store.Recording) ([]string, error) {
	rows, err := rec.DB.Query(`SELECT table_name FROM (
	    SELECT table_name, 0 AS k FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary
	    UNION ALL SELECT view_name, 1 FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal AND NOT temporary)
	  ORDER BY k, table_name`)
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
