package analysis

import (
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/store"
)

// Source is a recording with its clock, as analyses need it.
type Source struct {
	DB    *sql.DB
	Meta  map[string]string
	Clock Clock
	Lost  map[string]uint64
	// filled says which of skippable's tables hold rows (hasRows).
	filled map[string]bool
	// targets is the pid set target_pids holds, if any (useTargets).
	targets []uint32
	// everyStep runs the steps that would be skipped on empty input (tests
	// check that skipping them changes no answer).
	everyStep bool
}

// NewSource wraps an open recording.
func NewSource(r *store.Recording) *Source {
	off, _ := strconv.ParseInt(r.Meta["clock_offset_ns"], 10, 64)
	start, _ := strconv.ParseUint(r.Meta["start_mono"], 10, 64)
	dur, _ := strconv.ParseUint(r.Meta["duration_ns"], 10, 64)
	s := &Source{DB: r.DB, Meta: r.Meta, Clock: Clock{OffsetNS: off, StartMono: start, EndMono: start + dur}, Lost: r.Lost()}
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
var skippable = []string{"offcpu_raw", "syscall_raw", "syscall_totals", "uring", "unlink_raw", "dirtied", "forks", "existing",
	"samples", "block_raw"}

// hasRows says whether one of skippable's tables holds a row, asked once
// for all of them. DuckDB takes milliseconds to plan a query over the views
// even when its tables are empty: that was most of the time an explanation
// of a short command took.
func (s *Source) hasRows(table string) bool {
	if s.everyStep {
		return true
	}
	if s.filled == nil {
		s.filled = map[string]bool{}
		parts := make([]string, len(skippable))
		for i, t := range skippable {
			parts[i] = "SELECT '" + t + "' FROM (SELECT 1 FROM " + t + " LIMIT 1)"
		}
		rows, err := s.DB.Query(strings.Join(parts, " UNION ALL "))
		if err == nil {
			defer rows.Close()
			for rows.Next() {
				var t string
				if rows.Scan(&t) == nil {
					s.filled[t] = true
				}
			}
			err = rows.Err()
		}
		if err != nil { // unknown: every step runs
			for _, t := range skippable {
				s.filled[t] = true
			}
		}
	}
	filled, known := s.filled[table]
	return filled || !known && !slices.Contains(skippable, table)
}

// Full reports whether the recording streamed every I/O syscall.
func (s *Source) Full() bool { return s.Meta["level"] == "full" }

// WaitsOnly reports whether the recording hooked no syscall (the default
// level): its syscalls rows are waits seen at context switches, without
// return values, and calls that never waited are absent. Bytes then come
// from the pages the target dirtied and the disk reads it issued.
func (s *Source) WaitsOnly() bool { return s.Meta["level"] == "waits" }
