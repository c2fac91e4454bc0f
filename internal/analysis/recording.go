package analysis

import (
	"database/sql"
	"strconv"

	"github.com/whyslow/whyslow/internal/store"
)

// Source is a recording with its clock, as analyses need it.
type Source struct {
	DB    *sql.DB
	Meta  map[string]string
	Clock Clock
	Lost  map[string]uint64
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

// Full reports whether the recording streamed every I/O syscall.
func (s *Source) Full() bool { return s.Meta["level"] == "full" }

// WaitsOnly reports whether the recording hooked no syscall (the default
// level): its syscalls rows are waits seen at context switches, without
// return values, and calls that never waited are absent. Bytes then come
// from the pages the target dirtied and the disk reads it issued.
func (s *Source) WaitsOnly() bool { return s.Meta["level"] == "waits" }
