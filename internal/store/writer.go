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
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// Writer appends events to a recording. Rows are buffered by DuckDB's
// appenders and flushed at most every FlushEvery, so a recording killed with
// SIGKILL keeps everything up to its last flush.
type Writer struct {
	path      string
	connector *duckdb.Connector
	conn      driver.Conn
	db        *sql.DB
	app       map[string]*appender
	comms     map[uint32]string // tid -> comm, for kernel aggregates that carry none
	commIDs   map[string]uint32 // the comms dimension
	stacks    map[int32]bool
	lastFlush time.Time
	rows      uint64
	mu        sync.Mutex
	err       error
	failed    chan struct{} // closed at the first write error
	// metaKeys are the keys meta holds: a new one is inserted, a known one
	// replaced (an upsert took DuckDB 3 ms to plan, an insert under 1).
	metaKeys map[string]bool
	metaMu   sync.Mutex
}

// ErrExists is a recording path that is already taken.
var ErrExists = errors.New("already exists")

// FlushEvery bounds what a crash can lose.
const FlushEvery = time.Second

// Create makes a new recording at path; an existing file is an error, so a
// recording is never overwritten by accident.
func Create(path string) (*Writer, error) {
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("%s %w: choose another name or remove it", path, ErrExists)
	}
	connector, err := duckdb.NewConnector(path, nil)
	if err != nil {
		return nil, fmt.Errorf("creating recording %s: %w", path, err)
	}
	w := &Writer{path: path, connector: connector, db: sql.OpenDB(connector), app: map[string]*appender{},
		comms: map[uint32]string{}, commIDs: map[string]uint32{}, stacks: map[int32]bool{}, lastFlush: time.Now(),
		failed: make(chan struct{})}
	if err := w.init(); err != nil {
		w.db.Close()
		connector.Close()
		os.Remove(path)
		return nil, err
	}
	return w, nil
}

func (w *Writer) init() error {
	// One statement batch: each Exec is a round trip through cgo and the planner.
	// One transaction, too: DuckDB syncs its WAL at every commit.
	var ddl strings.Builder
	// DuckDB's buffer pool defaults to 80% of memory; a recorder on a busy
	// machine must stay small, and rows are on disk after each flush anyway.
	// A database-wide setting, made once: a connection opened after Finish
	// locked the configuration could not make it again.
	ddl.WriteString("SET memory_limit = '128MB';\n")
	ddl.WriteString("BEGIN TRANSACTION;\n")
	for _, t := range tables {
		fmt.Fprintf(&ddl, "CREATE TABLE %s (%s);\n", t.name, t.columns)
	}
	for _, v := range views {
		ddl.WriteString(v + ";\n")
	}
	fmt.Fprintf(&ddl, "INSERT INTO meta VALUES ('schema_version', '%d'), ('format', 'whyslow-recording');\n", SchemaVersion)
	ddl.WriteString("COMMIT;\n")
	if _, err := w.db.Exec(ddl.String()); err != nil {
		return fmt.Errorf("creating the recording's tables: %w", err)
	}
	w.metaKeys = map[string]bool{"schema_version": true, "format": true}
	conn, err := w.connector.Connect(context.Background())
	if err != nil {
		return fmt.Errorf("connecting to recording: %w", err)
	}
	w.conn = conn
	for _, t := range tables {
		if t.name == "meta" {
			continue
		}
		a, err := duckdb.NewAppenderFromConn(conn, "", t.name)
		if err != nil {
			return fmt.Errorf("opening appender for %s: %w", t.name, err)
		}
		w.app[t.name] = &appender{Appender: a}
	}
	return w.dimensions()
}

// dimensions writes the small tables that name the numbers of high-rate rows.
func (w *Writer) dimensions() error {
	for nr, n := range event.SyscallNames() {
		if err := w.row("syscall_names", uint16(nr), n[0], n[1]); err != nil {
			return err
		}
	}
	for _, k := range event.FileKinds() {
		if err := w.row("kinds", uint8(k), k.String()); err != nil {
			return err
		}
	}
	for i, r := range event.Reasons {
		if err := w.row("reasons", uint8(i), string(r)); err != nil {
			return err
		}
	}
	return nil
}

// commID interns a command name in the comms dimension.
func (w *Writer) commID(comm string) (uint32, error) {
	if id, ok := w.commIDs[comm]; ok {
		return id, nil
	}
	id := uint32(len(w.commIDs))
	w.commIDs[comm] = id
	return id, w.row("comms", id, comm)
}

func reasonID(r event.Reason) uint8 {
	for i, v := range event.Reasons {
		if v == r {
			return uint8(i)
		}
	}
	return uint8(len(event.Reasons) - 1) // other
}

func syscallNr(nr int32) int16 {
	if nr < -1 || nr > 32767 {
		return -1
	}
	return int16(nr)
}

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
		args = append(args, k, v)
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
	if time.Since(w.lastFlush) >= FlushEvery {
		if err := w.flushLocked(); err != nil {
			w.fail(err)
		}
	}
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

func (w *Writer) flushLocked() error {
	w.lastFlush = time.Now()
	// Only tables that got rows: each flush is a transaction, and a dozen
	// empty ones a second were a visible part of the recorder's CPU time.
	for name, a := range w.app {
		if !a.rows {
			continue
		}
		if err := a.Flush(); err != nil {
			return fmt.Errorf("flushing %s: %w", name, err)
		}
		a.rows = false
	}
	return nil
}

func (w *Writer) comm(h *event.Header) string {
	if h.Comm != "" {
		if w.comms[h.TID] != h.Comm { // a map write per event only when the name changes
			w.comms[h.TID] = h.Comm
		}
		return h.Comm
	}
	return w.comms[h.TID]
}

func (w *Writer) row(table string, vals ...driver.Value) error {
	a := w.app[table]
	if err := a.AppendRow(vals...); err != nil {
		return fmt.Errorf("appending to %s: %w", table, err)
	}
	a.rows = true
	return nil
}

// appender is a table's appender, and whether it got rows since its flush.
type appender struct {
	*duckdb.Appender
	rows bool
}

func (w *Writer) append(ev event.Event) error {
	switch e := ev.(type) {
	case *event.Syscall:
		cid, err := w.commID(w.comm(&e.Header))
		if err != nil {
			return err
		}
		return w.row("syscall_raw", e.Time, e.Dur, e.PID, e.TID, cid, uint16(e.Nr),
			e.FD, e.Ret, e.Req, e.Blocked, e.File.Dev, e.File.Ino, e.File.Gen, uint8(e.File.Kind),
			e.FD2, e.File2.Dev, e.File2.Ino, e.File2.Gen, e.Flags)
	case *event.SyscallTotals:
		c, name, bytes := event.SyscallClass(e.Nr), event.SyscallName(int32(e.Nr)), e.Bytes
		if !event.SyscallMovesBytes(name) {
			bytes = 0 // the kernel sums every positive return: accept's are fds, not bytes
		}
		return w.row("syscall_totals", e.Time, e.Last, e.PID, e.TID, w.comm(&e.Header), name, c.String(),
			e.File.Dev, e.File.Ino, e.File.Gen, e.File.Kind.String(), e.Count, bytes, e.TotalNS, e.MaxNS, e.Errors, e.Slots)
	case *event.File:
		return w.row("files", e.Time, e.Ref.Dev, e.Ref.Ino, e.Ref.Gen, e.Ref.Kind.String(), e.Path, e.Deleted, e.Truncated, e.Size,
			addr(e.Local.String(), e.Local.IsValid()), addr(e.Peer.String(), e.Peer.IsValid() && e.Peer.Port() != 0))
	case *event.OffCPU:
		if err := w.stack(e.StackID, e.Stack); err != nil {
			return err
		}
		cid, err := w.commID(w.comm(&e.Header))
		if err != nil {
			return err
		}
		wid, err := w.commID(e.WakerComm)
		if err != nil {
			return err
		}
		return w.row("offcpu_raw", e.Time, e.Time-e.Off, e.Off, e.Runq, e.PID, e.TID, cid, e.State,
			reasonID(e.Reason), e.StackID, syscallNr(e.Syscall), e.WakerPID, e.WakerTID, wid)
	case *event.Block:
		cid, err := w.commID(e.Comm)
		if err != nil {
			return err
		}
		return w.row("block_raw", e.Time, e.InsertTime, e.IssueTime, e.PID, e.TID, cid, e.Dev, e.Sector, e.Bytes, uint8(e.Op),
			e.Sync, e.Meta, e.FUA, e.Error, e.File.Dev, e.File.Ino, e.File.Gen)
	case *event.Throttle:
		return w.row("throttle", e.Time, e.PID, e.TID, w.comm(&e.Header), e.Pause, e.Period, e.Dirtied, e.BDIDev)
	case *event.Writeback:
		return w.row("writeback", e.Time, e.PID, e.TID, e.Comm, e.File.Dev, e.File.Ino, e.File.Gen, e.Pages, e.Dur)
	case *event.Dirtied:
		return w.row("dirtied", e.Time, e.Last, e.PID, e.TID, w.comm(&e.Header), e.File.Dev, e.File.Ino, e.File.Gen, e.Pages)
	case *event.CPUTime:
		return w.row("cputime", e.Time, e.PID, e.TID, w.comm(&e.Header), e.OnCPU)
	case *event.Fork:
		return w.row("forks", e.Time, e.PID, e.TID, w.comm(&e.Header), e.ChildPID, e.ChildTID)
	case *event.Exec:
		return w.row("execs", e.Time, e.PID, e.TID, w.comm(&e.Header), e.PPID, e.Filename, nonNil(e.Args), e.Cgroup)
	case *event.Sample:
		if err := w.stack(e.StackID, e.Stack); err != nil {
			return err
		}
		cid, err := w.commID(w.comm(&e.Header))
		if err != nil {
			return err
		}
		return w.row("samples", e.Time, e.PID, e.TID, cid, e.User, syscallNr(e.Syscall), e.FD, e.File.Dev, e.File.Ino, e.File.Gen,
			uint8(e.File.Kind), e.Path, e.StackID)
	case *event.Payload:
		return w.row("payloads", e.Time, e.PID, e.TID, e.Conn.Dev, e.Conn.Ino, e.Conn.Gen, e.Data)
	case *event.Existing:
		return w.row("existing", e.Time, e.PID, e.TID, w.comm(&e.Header), e.PPID, string(e.State), nonNil(e.Args))
	case *event.Exit:
		return w.row("exits", e.Time, e.PID, e.TID, w.comm(&e.Header), e.Code, e.GroupDead)
	case *event.Unlink:
		return w.row("unlink_raw", e.Time, e.Dur, e.PID, e.TID, w.comm(&e.Header), event.SyscallName(int32(e.Nr)), e.Ret,
			e.Dir.Dev, e.Dir.Ino, e.Dir.Gen, e.Name)
	case *event.Uring:
		return w.row("uring", e.Time, e.Dur, e.PID, e.TID, e.Comm, e.Opcode, e.Res, e.UserData, e.FD, e.File.Dev, e.File.Ino, e.File.Gen, e.File.Kind.String())
	}
	return nil
}

// stack writes a kernel stack the first time its id is met.
func (w *Writer) stack(id int32, frames []string) error {
	if id < 0 || w.stacks[id] || frames == nil {
		return nil
	}
	w.stacks[id] = true
	return w.row("stacks", id, frames)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func addr(s string, ok bool) any {
	if !ok {
		return nil
	}
	return s
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
	lockdown := setFlushAbove + "; SET enable_external_access = false; SET lock_configuration = true"
	if w.rows < rowGroupRows {
		// No table can be scanned in parallel, and a second thread only
		// costs: the explanation of a short command took 25% less CPU.
		lockdown = "SET threads = 1; " + lockdown
	}
	if temporary {
		lockdown = "PRAGMA disable_checkpoint_on_shutdown; " + lockdown
	}
	r := &Recording{DB: w.db}
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
// and closes the appenders.
func (w *Writer) finish(lost map[string]uint64) []error {
	var errs []error
	for src, n := range lost {
		if err := w.row("lost", src, n); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range sysinfo.Host.BlockDevices() {
		if err := w.row("devices", d.Dev, d.Name, d.Backing, d.BackingDev, d.BackingIno, d.Lower, d.ThrottleReadBPS, d.ThrottleWriteBPS); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ifa := range interfaceAddrs() {
		if err := w.row("interfaces", ifa[0], ifa[1]); err != nil {
			errs = append(errs, err)
		}
	}
	// The tables' last rows in one transaction: a commit each was a sync
	// of the WAL each, a dozen at the end of every recording.
	tx := w.conn != nil && w.exec("BEGIN TRANSACTION") == nil
	for name, a := range w.app {
		if err := a.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing appender %s: %w", name, err))
		}
	}
	if tx {
		if err := w.exec("COMMIT"); err != nil {
			errs = append(errs, fmt.Errorf("committing the last rows: %w", err))
		}
	}
	w.app = map[string]*appender{}
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
	return errs
}

// exec runs a statement on the appenders' connection.
func (w *Writer) exec(q string) error {
	_, err := w.conn.(driver.ExecerContext).ExecContext(context.Background(), q, nil)
	return err
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
