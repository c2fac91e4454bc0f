package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/whyslow/whyslow/internal/event"
)

// Writer appends events to a recording. Rows are loaded into DuckDB data
// chunks (load.go) and committed, all tables in one transaction, every
// FlushEvery, so a recording killed with SIGKILL keeps everything up to its
// last flush (a temporary recording: see CommitEvery).
type Writer struct {
	path      string
	connector *duckdb.Connector
	db        *sql.DB
	duck      *loadConn // the loads' connection to the same database
	t         loads
	// filled: the tables the loads added rows to, once finished.
	filled  map[string]bool
	comms   map[uint32]string // tid -> comm, for kernel aggregates that carry none
	commIDs map[string]uint32 // the comms dimension
	// threads and named cache comm ids by thread (rows.go).
	threads, named [256]commSlot
	stacks         map[int32]bool
	lastFlush      time.Time
	commitEvery    time.Duration
	rows           uint64
	mu             sync.Mutex
	err            error
	failed         chan struct{} // closed at the first write error
	// metaKeys are the keys meta holds: a new one is inserted, a known one
	// replaced (an upsert took DuckDB 3 ms to plan, an insert under 1).
	metaKeys map[string]bool
	metaMu   sync.Mutex
	// inTx: the loads' connection has a transaction open (spill), which
	// the next flush commits; committed: a flush has committed rows.
	inTx, committed bool
	memory          string // DuckDB's memory limit while recording
}

// flushRows bounds the rows a table's appender holds: past it they go into
// the open transaction, committed at the next FlushEvery. The appender keeps
// what it holds in memory, about 100 bytes a row: at --full's rates a
// second's worth was 50 to 100 MB. The transaction's rows are written to the
// file a row group at a time (write_buffer_row_group_count).
const flushRows = 8 * 2048

// ErrExists is a recording path that is already taken.
var ErrExists = errors.New("already exists")

// DuckDB's memory limits while recording, and for the analyses of a
// finished recording (Finish). While recording the pool holds the rows of
// the open transaction not yet written (incomplete row groups, ~12 MB each
// for syscall_raw at --full), and otherwise keeps the blocks just written,
// which are never read back: at 128 MB, --full's recorder grew to ~290 MB
// in 30 s. Below 64 MB, DuckDB spilled rows to temporary files beside the
// recording (48 MB: up to 90 MB of them) and took ~10% more CPU a row.
const (
	recordingMemory = "64MB"
	analysisMemory  = "128MB"
)

// commitMemory is DuckDB's limit while the rows of a second are flushed and
// committed, set back to the recording's after. A commit pins every table's
// open row groups at once: what it needs grows with the tables that have
// rows, not with the rate, and a mix of many (a build, --full with
// --requests) could pass recordingMemory. The commit then failed ("failed
// to pin block"), and the recording stopped and lost its last second. The
// pool keeps no more than it needs, so the common commit uses what it did.
const commitMemory = "1GB"

// FlushEvery bounds what a crash can lose.
const FlushEvery = time.Second

// TemporaryCommitEvery is how often a recording its caller removes after
// analysing it (run, attach) commits. A crash loses such a recording anyway,
// so a commit only bounds what a full disk would take from the explanation;
// each one cost ~12 ms of CPU (DuckDB serialising the rows into its WAL,
// flushing every appender): during a 20 s parallel build, committing every
// second was ~15% of whyslow's CPU.
const TemporaryCommitEvery = 10 * time.Second

// CommitEvery sets how often rows are committed (FlushEvery by default).
func (w *Writer) CommitEvery(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitEvery = d
}

// Create makes a new recording at path; an existing file is an error, so a
// recording is never overwritten by accident.
func Create(path string) (*Writer, error) { return create(path, recordingMemory) }

// create is Create with DuckDB's memory limit while recording.
func create(path, memory string) (*Writer, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("%s %w: choose another name or remove it", path, ErrExists)
	}
	if copyTemplate(TemplateDir, path) {
		if w, err := openWriter(path, memory, true); err == nil {
			return w, nil
		}
		// The copy did not open as a recording (a damaged template): this
		// recording is made from scratch, and the template again with it.
		os.Remove(path + ".wal")
		dropTemplate(TemplateDir)
	}
	return openWriter(path, memory, false)
}

// openWriter opens the database at path, a copy of the empty recording
// (copied) or a new file, and readies the loads.
func openWriter(path, memory string, copied bool) (*Writer, error) {
	connector, err := duckdb.NewConnector(path, nil)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("creating recording %s: %w", path, err)
	}
	w := &Writer{path: path, connector: connector, db: sql.OpenDB(connector),
		comms: map[uint32]string{}, commIDs: map[string]uint32{}, stacks: map[int32]bool{}, lastFlush: time.Now(), commitEvery: FlushEvery,
		failed: make(chan struct{}), memory: memory}
	if err := w.init(copied); err != nil {
		w.t.close()
		if w.duck != nil {
			w.duck.close()
		}
		w.db.Close()
		connector.Close()
		os.Remove(path)
		return nil, err
	}
	return w, nil
}

// init sets DuckDB up for recording and, unless the file is a copy of the
// empty recording (copied), makes the schema, then a template of it.
func (w *Writer) init(copied bool) error {
	// One statement batch: each Exec is a round trip through cgo and the planner.
	var ddl strings.Builder
	// DuckDB's buffer pool defaults to 80% of memory; a recorder on a busy
	// machine must stay small, and rows are on disk after each flush anyway.
	// A database-wide setting: Finish gives analyses analysisMemory before it
	// locks the configuration. One row group written at a time by the open
	// transaction (DuckDB's default buffers five, ~60 MB at --full).
	fmt.Fprintf(&ddl, "SET memory_limit = '%s';\n", w.memory)
	ddl.WriteString("SET write_buffer_row_group_count = 1;\n")
	// One thread: a commit's checkpoint otherwise ran on DuckDB's workers
	// while the committing thread spun waiting for them (a sixth of the
	// recorder's CPU at the default level), on cores the target needs.
	// Finish gives analyses their threads back.
	ddl.WriteString("SET threads = 1;\n")
	// No run-length encoding: trying it on every column of every row group
	// (analysis, then compression where it won) was ~6% of the cost of
	// storing a --full call; bit-packing, which stays, stores constant runs
	// as compactly, and a --full recording came out 4% smaller without it
	// (BENCHMARKS.md, 1d).
	ddl.WriteString("SET disabled_compression_methods = 'rle';\n")
	if !copied {
		ddl.WriteString(schemaSQL())
	}
	if _, err := w.db.Exec(ddl.String()); err != nil {
		return fmt.Errorf("creating the recording's tables: %w", err)
	}
	if !copied && TemplateDir != "" {
		// The schema moved from the WAL into the file, which is then the
		// template: once a boot.
		if _, err := os.Stat(templatePath(TemplateDir)); err != nil {
			if _, err := w.db.Exec("CHECKPOINT"); err == nil {
				saveTemplate(TemplateDir, w.path)
			}
		}
	}
	w.metaKeys = map[string]bool{"schema_version": true, "format": true}
	duck, err := openLoadConn(w.path)
	if err != nil {
		return err
	}
	w.duck = duck
	l, err := openLoads(duck)
	if err != nil {
		return err
	}
	w.t = *l
	return w.dimensions()
}

// DB is the recording's pool of connections, for a caller that readies
// its analysis while the recording is made (Finish hands it over for
// analysis at the end); the writer's own rows go through its own
// connection.
func (w *Writer) DB() *sql.DB { return w.db }

// SetMeta records key/value metadata (replacing earlier values).
func (w *Writer) SetMeta(kv map[string]string) error {
	if len(kv) == 0 {
		return nil
	}
	w.metaMu.Lock()
	defer w.metaMu.Unlock()
	verb := "INSERT"
	var q strings.Builder
	args := make([]any, 0, 2*len(kv))
	for k, v := range kv {
		if w.metaKeys[k] {
			verb = "INSERT OR REPLACE"
		}
		if len(args) > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?)")
		args = append(args, k, utf8Text(v)) // not UTF-8, DuckDB refuses the whole statement
	}
	if _, err := w.db.Exec(verb+" INTO meta VALUES "+q.String(), args...); err != nil {
		return fmt.Errorf("writing metadata: %w", err)
	}
	for k := range kv {
		w.metaKeys[k] = true
	}
	return nil
}

// Rows is how many rows were appended.
func (w *Writer) Rows() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rows
}

// Err is the first write error; after it the writer drops events.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Failed is closed when a write fails (a full disk): the recording should stop.
func (w *Writer) Failed() <-chan struct{} { return w.failed }

// Write appends a batch. A write error (a full disk) stops further writes,
// closes Failed and is kept for Err; what was flushed before stays readable.
func (w *Writer) Write(batch []event.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	for _, ev := range batch {
		if err := w.append(ev); err != nil {
			w.fail(err)
			return
		}
		w.rows++
	}
	if err := w.spill(); err != nil {
		w.fail(err)
		return
	}
	// The first spill commits at once. The open transaction writes its row
	// groups to the file as they fill; at --full the spool, on the same
	// disk, may fill it before the first second's commit: what the first
	// commit holds is kept, whichever write meets the full disk first.
	if time.Since(w.lastFlush) >= w.commitEvery || (w.inTx && !w.committed) {
		if err := w.flushLocked(); err != nil {
			w.fail(err)
		}
	}
}

// spill moves the rows of every appender holding flushRows or more into the
// open transaction.
func (w *Writer) spill() error {
	for _, t := range w.t.all {
		if t.pending < flushRows {
			continue
		}
		if err := w.begin(); err != nil {
			return err
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}

// begin opens the transaction the loads' rows go into, unless one is open.
func (w *Writer) begin() error {
	if w.inTx {
		return nil
	}
	if err := w.duck.exec("BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("flushing: %w", err)
	}
	w.inTx = true
	return nil
}

func (w *Writer) fail(err error) {
	w.err = w.explain(err)
	close(w.failed)
}

// explain turns DuckDB's report of a full disk into one plain sentence.
func (w *Writer) explain(err error) error {
	if strings.Contains(err.Error(), "No space left on device") {
		return fmt.Errorf("%s: %w (events up to the last flush are kept)", w.path, ErrDiskFull)
	}
	return fmt.Errorf("writing %s: %w", w.path, err)
}

// ErrDiskFull is a recording that ran out of space.
var ErrDiskFull = errors.New("no space left on device")

// flushLocked commits every row loaded so far, all tables in one
// transaction: each commit is a sync of the WAL.
func (w *Writer) flushLocked() error {
	w.lastFlush = time.Now()
	if !w.inTx && !w.t.loaded() {
		return nil
	}
	if err := w.begin(); err != nil {
		return err
	}
	w.inTx = false
	defer w.roomToCommit()()
	for _, t := range w.t.all {
		if err := t.flush(); err != nil {
			w.duck.exec("ROLLBACK")
			return err
		}
	}
	if err := w.duck.exec("COMMIT"); err != nil {
		return fmt.Errorf("flushing: %w", err)
	}
	w.committed = true
	return nil
}

// roomToCommit raises DuckDB's memory limit to commitMemory for a flush and
// its commit, and returns what sets it back.
func (w *Writer) roomToCommit() (restore func()) {
	if w.duck.exec("SET memory_limit = '"+commitMemory+"'") != nil {
		return func() {}
	}
	return func() { w.duck.exec("SET memory_limit = '" + w.memory + "'") }
}

// Close flushes, records lost counts and devices, and closes the file.
func (w *Writer) Close(lost map[string]uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	errs := w.finish(lost)
	errs = append(errs, w.closeDB(true)...)
	return w.closeErr(errs)
}

// Finish ends the recording as Close does, but keeps its database open and
// returns it for analysis: `whyslow run` explains at once, without closing,
// checkpointing and reopening the file (a visible part of its start-up).
// The database is then locked down as Open's are: no file but the recording
// can be read or written by a query. The Recording's Close checkpoints a
// recording that is kept; a temporary one, about to be removed, is closed
// without the checkpoint (seconds, for a long recording nobody will read).
func (w *Writer) Finish(lost map[string]uint64, temporary bool) (*Recording, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.closeErr(w.finish(lost)); err != nil {
		w.closeDB(!temporary)
		return nil, err
	}
	lockdown := "SET memory_limit = '" + analysisMemory + "'; SET enable_external_access = false; SET lock_configuration = true"
	if w.rows < rowGroupRows {
		// No table can be scanned in parallel, and a second thread only
		// costs: the explanation of a short command took 25% less CPU.
		// (The recorder's one thread, kept.)
		lockdown = "SET threads = 1; " + lockdown
	} else {
		lockdown = "RESET threads; " + lockdown
	}
	if temporary {
		lockdown = "PRAGMA disable_checkpoint_on_shutdown; " + lockdown
	}
	r := &Recording{DB: w.db, Filled: w.filled}
	if _, err := w.db.Exec(lockdown); err != nil {
		w.closeDB(!temporary)
		return nil, fmt.Errorf("locking the recording for analysis: %w", err)
	}
	if err := r.readMeta(); err != nil {
		w.closeDB(!temporary)
		return nil, fmt.Errorf("reading the recording's metadata: %w", err)
	}
	r.close = func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.closeErr(w.closeDB(!temporary))
	}
	return r, nil
}

// rowGroupRows is DuckDB's row group size: its unit of parallel scans.
const rowGroupRows = 122880

// finish writes what only the end knows (lost counts, devices, interfaces)
// and closes the loads.
func (w *Writer) finish(lost map[string]uint64) []error {
	if w.duck == nil {
		return nil
	}
	errs := w.endRows(lost)
	w.filled = w.t.filled()
	// The tables' last rows in one transaction: a commit each was a sync
	// of the WAL each, a dozen at the end of every recording.
	tx := w.inTx || w.duck.exec("BEGIN TRANSACTION") == nil
	w.inTx = false
	restore := w.roomToCommit()
	errs = append(errs, w.t.close()...)
	if tx {
		if err := w.duck.exec("COMMIT"); err != nil {
			errs = append(errs, fmt.Errorf("committing the last rows: %w", err))
		}
	}
	restore()
	w.duck.close()
	w.duck = nil
	if err := w.writeDerived(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// writeDerived stores the derived tables (reasons.go), as this whyslow's
// rules name them.
func (w *Writer) writeDerived() error {
	conn, err := w.db.Conn(context.Background())
	if err != nil {
		return fmt.Errorf("deriving the waits' reasons: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("the connection cannot run statements")
		}
		d, err := derive(func(q string) ([][]any, error) { return driverQueryAll(ex, q) }, w.filled)
		if err == nil {
			_, err = ex.ExecContext(context.Background(), d.fill(false), nil)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("deriving the waits' reasons: %w", err)
	}
	return nil
}

// closeDB closes the database, checkpointed (its rows moved from the WAL
// into the file, compressed) or not (a temporary recording).
func (w *Writer) closeDB(checkpoint bool) []error {
	if w.db == nil {
		return nil
	}
	var errs []error
	if checkpoint {
		// FORCE: an analysis on a finished recording may leave a transaction
		// open (rows not read to the end), and a plain checkpoint then does nothing.
		if _, err := w.db.Exec("FORCE CHECKPOINT"); err != nil {
			errs = append(errs, fmt.Errorf("checkpointing: %w", err))
		}
	}
	errs = append(errs, w.db.Close(), w.connector.Close())
	w.db = nil
	return errs
}

// closeErr is the error a close reports: the first write failure says it
// all; a full disk is said plainly.
func (w *Writer) closeErr(errs []error) error {
	if w.err != nil {
		return w.err
	}
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), "No space left on device") {
			return w.explain(err)
		}
	}
	return errors.Join(errs...)
}
