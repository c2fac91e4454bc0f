package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/whyslow/whyslow/internal/format"
)

// ErrNotRecording is a file that is not a whyslow recording (or is damaged).
var ErrNotRecording = errors.New("not a whyslow recording")

// ErrUnreadable is a recording that cannot be read: the user may not read
// the file, or DuckDB itself refuses to open it (locked by a running
// recorder, written by a newer DuckDB, damaged). The error carries the
// reason: the system's, or DuckDB's.
var ErrUnreadable = errors.New("DuckDB cannot open it")

// deniedError is a recording the user may not read: ErrUnreadable, worded
// by the system ("open x.db: permission denied"). Still fs.ErrPermission,
// but a bad file, not a missing privilege to capture.
type deniedError struct{ err error }

func (e *deniedError) Error() string   { return e.err.Error() }
func (e *deniedError) Unwrap() []error { return []error{ErrUnreadable, e.err} }

// fileErr is a failure to stat or open the recording's file itself.
func fileErr(err error) error {
	err = fmt.Errorf("opening recording: %w", err)
	if errors.Is(err, fs.ErrPermission) {
		return &deniedError{err}
	}
	return err
}

// Recording is an open recording: read-only when opened, or the database a
// Writer has just finished (Writer.Finish).
type Recording struct {
	DB   *sql.DB
	Meta map[string]string
	// Filled, for the recording a writer just finished (Writer.Finish),
	// says which tables hold rows (by name, the syscall_raw view too): what
	// an analysis would ask first, known without asking. Nil when opened
	// from a file.
	Filled map[string]bool
	// close, set by Writer.Finish, closes the writer's database.
	close func() error
}

// NoteTemp is told of each temporary directory Open makes, before DuckDB
// uses it: a guard around a reader that may crash removes them (cli).
var NoteTemp = func(path string) {}

// Open opens a recording for analysis and checks that it is one.
func Open(path string) (*Recording, error) { return open(path, "") }

// OpenWritingTo opens a recording like Open, except that its queries may
// also read and write files under dir (COPY ... TO for exports): DuckDB's
// allowed_directories, with every other file still out of reach.
func OpenWritingTo(path, dir string) (*Recording, error) {
	if dir == "" || strings.ContainsRune(dir, 0) {
		return nil, fmt.Errorf("opening recording: bad output directory %q", dir)
	}
	return open(path, dir)
}

// open checks that path is a file DuckDB may be given, opens it locked down
// (queries may write under dir alone; "" nowhere), and checks that it is a
// recording this whyslow reads; it closes what it opened when not.
func open(path, dir string) (*Recording, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	r, reasons, err := connect(path, dir)
	if err != nil {
		return nil, err
	}
	if err := r.checkOurs(path, reasons); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// checkFile refuses what is not a regular file beginning as a DuckDB
// database, before DuckDB is given it.
func checkFile(path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return fileErr(err)
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory: %w", path, ErrNotRecording)
	}
	if !st.Mode().IsRegular() {
		// A FIFO or a device would be read forever, or from a stranger.
		return fmt.Errorf("%s is not a regular file: %w", path, ErrNotRecording)
	}
	return checkMagic(path)
}

// connect opens the database read-only, each of its connections locked
// down, with a temporary directory of its own that the Recording removes
// when it closes. reasons derives the waits' reasons as connections open;
// its error is the caller's to check.
//
// Read-only: analyses and `whyslow sql` must never change what was
// recorded. DuckDB still replays the WAL of a recording cut short, in memory.
// No external access: a query runs as root, and must not read or write
// any other file (COPY ... TO, read_csv, ATTACH, extensions). DuckDB
// still lets queries read and write its temporary directory (REC.tmp by
// default, beside the recording: anyone's files), so it gets an empty one
// of its own, removed when the recording closes. Export may also write
// under one directory (allowed_directories).
func connect(path, dir string) (*Recording, *readerDerived, error) {
	tmp, err := os.MkdirTemp("", "whyslow-duckdb-")
	if err != nil {
		return nil, nil, fmt.Errorf("opening recording: %w", err)
	}
	NoteTemp(tmp)
	dsn := path + "?access_mode=read_only"
	reasons := &readerDerived{}
	connector, err := duckdb.NewConnector(dsn, lockDown(tmp, dir, reasons))
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, unreadable(path, err)
	}
	db := sql.OpenDB(connector)
	r := &Recording{DB: db, close: func() error {
		err := db.Close()
		os.RemoveAll(tmp)
		return err
	}}
	return r, reasons, nil
}

// lockDown returns what each new connection runs first: the settings that
// give DuckDB the temporary directory tmp and no other file but those under
// dir, then reasons' derivation.
//
// The settings are the database's: the first connection makes and locks
// them; a later one (a query run while another's rows are read) cannot
// set them again, and finds them made.
func lockDown(tmp, dir string, reasons *readerDerived) func(driver.ExecerContext) error {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" } // no other escapes in DuckDB's SQL
	settings := "SET temp_directory = " + quote(tmp) + "; "
	if dir != "" {
		settings += "SET allowed_directories = [" + quote(dir) + "]; "
	}
	settings += "SET enable_external_access = false; SET lock_configuration = true"
	return func(ex driver.ExecerContext) error {
		_, err := ex.ExecContext(context.Background(), settings, nil)
		if err == nil {
			reasons.onConnect(ex)
			return nil
		}
		if q, ok := ex.(driver.QueryerContext); ok {
			if rows, qerr := q.QueryContext(context.Background(), "SELECT current_setting('lock_configuration')", nil); qerr == nil {
				v := make([]driver.Value, 1)
				locked := rows.Next(v) == nil && v[0] == true
				rows.Close()
				if locked {
					reasons.onConnect(ex)
					return nil
				}
			}
		}
		return err
	}
}

// checkOurs reads the meta and checks that the database is a whyslow
// recording of a version this whyslow reads, with its views, and that the
// waits' reasons could be derived from it.
func (r *Recording) checkOurs(path string, reasons *readerDerived) error {
	if err := r.readMeta(); err != nil {
		var de *duckdb.Error
		if errors.As(err, &de) && (de.Type == duckdb.ErrorTypeCatalog || de.Type == duckdb.ErrorTypeBinder) {
			return fmt.Errorf("%s: %w", path, ErrNotRecording) // no meta table, or not ours
		}
		return unreadable(path, err)
	}
	meta := r.Meta
	if meta["format"] != "whyslow-recording" {
		return fmt.Errorf("%s: %w", path, ErrNotRecording)
	}
	if v, _ := strconv.Atoi(meta["schema_version"]); v != SchemaVersion && !slices.Contains(readsToo, v) {
		return fmt.Errorf("%s: %w: it is a version %s recording, this whyslow reads versions %d to %d (docs/trace-format.md, Versions): open it with the whyslow that made it (its meta.whyslow_version: %s)",
			path, ErrNotRecording, format.Safe(meta["schema_version"]), readsToo[0], SchemaVersion, format.Safe(meta["whyslow_version"]))
	}
	// A recording cut short keeps its views: they were committed first. Its
	// own: an older version's are made again, temporary (versions.go).
	var n int
	if r.DB.QueryRow("SELECT count(*) FROM duckdb_views() WHERE view_name = 'io' AND NOT temporary").Scan(&n); n == 0 {
		return fmt.Errorf("%s: %w", path, ErrNotRecording)
	}
	// The waits' reasons could not be derived: a damaged table.
	if reasons.err != nil {
		return unreadable(path, reasons.err)
	}
	return nil
}

// unreadable is DuckDB's refusal to open path as one line: its reason's
// first line, without the driver's prefix or DuckDB's advice that follows.
func unreadable(path string, err error) error {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, "could not connect to database: "); ok {
		msg = after
	}
	msg, _, _ = strings.Cut(msg, "\n")
	return fmt.Errorf("%s: %w: %s", path, ErrUnreadable, strings.TrimSpace(msg))
}

func (r *Recording) readMeta() error {
	rows, err := r.DB.Query("SELECT key, value FROM meta")
	if err != nil {
		return err
	}
	defer rows.Close()
	r.Meta = map[string]string{}
	for rows.Next() {
		var k, v string
		if rows.Scan(&k, &v) == nil {
			r.Meta[k] = v
		}
	}
	return rows.Err()
}

// checkMagic refuses files that are not DuckDB databases before DuckDB sees them.
func checkMagic(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fileErr(err)
	}
	defer f.Close()
	head := make([]byte, 16)
	if n, _ := f.Read(head); n < 12 || string(head[8:12]) != "DUCK" {
		return fmt.Errorf("%s: %w", path, ErrNotRecording)
	}
	// A DuckDB file begins with three 4 KiB headers; fewer bytes is a file
	// cut short (a partial copy or download).
	if st, err := f.Stat(); err == nil && st.Size() < 3*4096 {
		return fmt.Errorf("%s: %w: cut short at %d bytes", path, ErrNotRecording, st.Size())
	}
	return nil
}

// Close closes the recording (a finished writer's is checkpointed first,
// unless it was temporary).
func (r *Recording) Close() error {
	if r.close != nil {
		return r.close()
	}
	return r.DB.Close()
}

// Lost returns the recording's lost-event counts by source (only non-zero ones).
func (r *Recording) Lost() map[string]uint64 {
	out := map[string]uint64{}
	rows, err := r.DB.Query("SELECT source, sum(count) FROM lost GROUP BY source HAVING sum(count) > 0")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var n uint64
		if rows.Scan(&s, &n) == nil {
			out[s] = n
		}
	}
	return out
}
