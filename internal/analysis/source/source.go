// Package source is a recording as every analysis reads it: a Source (the
// recording's pool, metadata, clock and losses) whose analysis runs hold a
// connection of their own, the SQL modules' loader, the macros every held
// connection is made with, and the Filter an analysis takes. The analyses
// (internal/analysis, internal/analysis/reports) import it; it imports none
// of them.
package source

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/whyslow/whyslow/internal/store"
)

// Source is a recording with its clock, as analyses need it. It may be
// shared by analyses running at once: each runs on a connection of its own
// (Hold).
type Source struct {
	// DB is the recording's pool of connections, for callers' own queries;
	// an analysis queries only the connection it holds.
	DB    *sql.DB
	Meta  map[string]string
	Clock Clock
	Lost  map[string]uint64
	// EveryStep runs the steps that would be skipped on empty input (tests
	// check that skipping them changes no answer).
	EveryStep bool
	// filled says which of skippable's tables hold rows (HasRows): one for
	// the Source and every analysis run on it.
	filled *filled
	// conn is the connection the running analysis holds (Hold), with ctx:
	// DuckDB's temporary tables and macros are a connection's own, so every
	// query of an analysis goes through it.
	conn *sql.Conn
	ctx  context.Context
	// readied is a connection made ready before the recording was
	// finished, for the first Hold to take (Use).
	readied *Readied
}

// New wraps an open recording.
func New(r *store.Recording) *Source {
	off, _ := strconv.ParseInt(r.Meta["clock_offset_ns"], 10, 64)
	start, _ := strconv.ParseUint(r.Meta["start_mono"], 10, 64)
	dur, _ := strconv.ParseUint(r.Meta["duration_ns"], 10, 64)
	s := &Source{DB: r.DB, Meta: r.Meta, Clock: Clock{OffsetNS: off, StartMono: start, EndMono: start + dur}, Lost: r.Lost(),
		filled: &filled{}}
	if r.Filled != nil {
		// The writer that just finished it knows which tables hold rows.
		s.filled.once.Do(func() {
			s.filled.tables = map[string]bool{}
			for _, t := range skippable {
				s.filled.tables[t] = r.Filled[t]
			}
		})
	}
	if dur == 0 {
		// cut short (SIGKILL): the end is the last event
		var last sql.NullInt64
		r.DB.QueryRow("SELECT max(ts) FROM (SELECT max(ts) AS ts FROM syscalls UNION ALL SELECT max(ts) FROM offcpu UNION ALL SELECT max(ts) FROM block)").Scan(&last)
		if last.Valid {
			s.Clock.EndMono = uint64(last.Int64)
		}
	}
	return s
}

// skippable are the tables a step of an analysis is skipped on when they
// are empty: what the step would find is then known without asking.
var skippable = []string{"offcpu_raw", "syscall_raw", "syscall_totals_raw", "uring_raw", "unlink_raw", "dirtied", "forks", "existing",
	"samples", "block_raw"}

// HasRows says whether one of skippable's tables holds a row, asked once
// for all of them. DuckDB takes milliseconds to plan a query over the views
// even when its tables are empty: that was most of the time an explanation
// of a short command took.
func (s *Source) HasRows(table string) bool {
	if s.EveryStep {
		return true
	}
	s.filled.once.Do(func() {
		s.filled.tables = map[string]bool{}
		parts := make([]string, len(skippable))
		for i, t := range skippable {
			parts[i] = "SELECT '" + t + "' FROM (SELECT 1 FROM " + t + " LIMIT 1)"
		}
		rows, err := s.Query(strings.Join(parts, " UNION ALL "))
		if err == nil {
			defer rows.Close()
			for rows.Next() {
				var t string
				if rows.Scan(&t) == nil {
					s.filled.tables[t] = true
				}
			}
			err = rows.Err()
		}
		if err != nil { // unknown: every step runs
			for _, t := range skippable {
				s.filled.tables[t] = true
			}
		}
	})
	filled, known := s.filled.tables[table]
	return filled || !known && !slices.Contains(skippable, table)
}

// filled is HasRows' answer, found once.
type filled struct {
	once   sync.Once
	tables map[string]bool
}

// Hold gives an analysis run a connection of its own, held until done is
// called: the temporary tables it builds (target_offcpu, usage_io, ...) are
// that connection's, and every query of the run reads them through it. The
// connection is made with target_pids (empty until the analysis names its
// target) and the macros every analysis may use (Macros). A Source already
// held (an analysis run inside another: requests explain) is returned as it
// is, with a done that does nothing. done closes the connection, and the
// run's temporary tables with it (discard).
func (s *Source) Hold() (held *Source, done func(), err error) {
	if s.conn != nil {
		return s, func() {}, nil
	}
	ctx := context.Background()
	conn := s.readied.take()
	if conn == nil {
		if conn, err = readyConn(ctx, s.DB); err != nil {
			return nil, nil, err
		}
	}
	h := *s
	h.conn, h.ctx = conn, ctx
	if h.filled == nil {
		h.filled = &filled{}
	}
	return &h, func() { discard(conn) }, nil
}

// discard closes a run's connection instead of giving it back to the pool:
// its temporary tables and macros go with it, and no later run reads
// them. Dropping them one by one to keep the connection (a query of the
// catalog, then the drops) cost ~2 ms of every analysis; a new connection
// is made, with the derived tables of the recording, in a fraction of it.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn }) // not pooled again: closed
	conn.Close()
}

// readyConn takes a connection of db and makes what an analysis run's is
// made with: target_pids (empty until the analysis names its target) and
// the macros every analysis may use (Macros).
func readyConn(ctx context.Context, db *sql.DB) (*sql.Conn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to the recording: %w", err)
	}
	// The macros (sql/macros.sql) name target_pids: it is made first.
	if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE target_pids (pid UINTEGER);\n"+Macros()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("making the analyses' macros: %w", err)
	}
	return conn, nil
}

// Readied is a connection made ready for an analysis run, as Hold makes
// one, before its recording is finished: run readies its explanation's
// while the programs load, off the path of the answer (DuckDB binding the
// macros, ~5 ms). The first Hold of a Source given it (Use) takes it.
type Readied struct {
	mu   sync.Mutex
	conn *sql.Conn
}

// Ready readies a connection of db for an analysis run. If it cannot, the
// Hold it was for makes its own, and says why.
func Ready(db *sql.DB) *Readied {
	conn, _ := readyConn(context.Background(), db)
	return &Readied{conn: conn}
}

// take hands the connection over, once; nil if there is none.
func (r *Readied) take() *sql.Conn {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	conn := r.conn
	r.conn = nil
	return conn
}

// Close gives the connection back if no Hold took it. A nil Readied, or
// one closed already, is closed.
func (r *Readied) Close() error {
	if conn := r.take(); conn != nil {
		return conn.Close()
	}
	return nil
}

// Use gives the Source a connection readied for it (Ready): its first
// Hold takes it instead of making one.
func (s *Source) Use(r *Readied) { s.readied = r }

// Held says whether the Source is an analysis run's, holding a connection.
func (s *Source) Held() bool { return s.conn != nil }

// Query, QueryRow and Exec run q on the connection the analysis holds.
// Outside one (a step called without Hold) they panic: another connection
// would not have the run's temporary tables, or worse, another run's.
func (s *Source) Query(q string, args ...any) (*sql.Rows, error) {
	return s.Conn().QueryContext(s.ctx, q, args...)
}

func (s *Source) QueryRow(q string, args ...any) *sql.Row {
	return s.Conn().QueryRowContext(s.ctx, q, args...)
}

func (s *Source) Exec(q string, args ...any) (sql.Result, error) {
	return s.Conn().ExecContext(s.ctx, q, args...)
}

// Conn is the connection the analysis holds, with Context, for what
// database/sql's queries do not give (driver values unconverted).
func (s *Source) Conn() *sql.Conn {
	if s.conn == nil {
		panic("analysis: a query outside the connection of an analysis (Source.Hold)")
	}
	return s.conn
}

// Context is the held connection's context.
func (s *Source) Context() context.Context { return s.ctx }

// Full reports whether the recording streamed every I/O syscall.
func (s *Source) Full() bool { return s.Meta["level"] == "full" }

// WaitsOnly reports whether the recording hooked no syscall (the default
// level): its syscalls rows are waits seen at context switches, without
// return values, and calls that never waited are absent. Bytes then come
// from the pages the target dirtied and the disk reads it issued.
func (s *Source) WaitsOnly() bool { return s.Meta["level"] == "waits" }
