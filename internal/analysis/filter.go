// Package analysis answers questions over a recording. Every analysis is a
// pure function of the recording and a Filter; output renders its result.
package analysis

import (
	"fmt"
	"strings"
	"time"
)

// Filter selects what an analysis looks at. Times are CLOCK_MONOTONIC ns, as
// stored; zero means open.
type Filter struct {
	Begin, End uint64
	PIDs       []uint32
	TIDs       []uint32
	Comms      []string
	FileGlob   string
	MinSize    int64 // bytes; -1 none
	MaxSize    int64
	Min, Max   time.Duration // latency; 0 none
	Limit      int
}

// NoFilter selects everything.
func NoFilter() Filter { return Filter{MinSize: -1, MaxSize: -1, Limit: 10} }

// clause builds a WHERE clause for a table or view with the given column
// names. Values are bound as parameters: process and file names never reach
// the SQL text.
type cols struct {
	ts, end, pid, tid, comm, path, size, dur string
	// On the numeric raw tables, names are matched through their ids.
	commByID, pathByID bool
}

// diskCols filter block requests (the disk view): a request spans insert to
// completion, its size is its bytes.
var diskCols = cols{ts: "insert_ts", end: "ts", pid: "pid", tid: "tid", comm: "comm", size: "bytes", dur: "total_ns", path: "path"}

var ioCols = cols{ts: "ts", end: "end_ts", pid: "pid", tid: "tid", comm: "comm", path: "path", size: "bytes", dur: "dur"}

// rawCols filters syscall_raw directly, before any name is joined: sorting
// ten million numeric rows and naming the hundred kept is far cheaper than
// naming ten million and sorting them.
var rawCols = cols{ts: "ts", end: "(ts + dur)", pid: "pid", tid: "tid", dur: "dur",
	size:     "(CASE WHEN ret > 0 AND nr IN (SELECT nr FROM syscall_names WHERE name IN (" + byteSyscalls + ")) THEN ret ELSE 0 END)",
	commByID: true, pathByID: true}

func (f Filter) where(c cols) (string, []any) {
	var conds []string
	var args []any
	if f.Begin != 0 && c.end != "" {
		conds = append(conds, c.end+" >= ?")
		args = append(args, f.Begin)
	}
	if f.End != 0 && c.ts != "" {
		conds = append(conds, c.ts+" <= ?")
		args = append(args, f.End)
	}
	in := func(col string, n int) string {
		return col + " IN (" + strings.TrimSuffix(strings.Repeat("?,", n), ",") + ")"
	}
	if len(f.PIDs) > 0 && c.pid != "" {
		conds = append(conds, in(c.pid, len(f.PIDs)))
		for _, p := range f.PIDs {
			args = append(args, p)
		}
	}
	if len(f.TIDs) > 0 && c.tid != "" {
		conds = append(conds, in(c.tid, len(f.TIDs)))
		for _, p := range f.TIDs {
			args = append(args, p)
		}
	}
	if len(f.Comms) > 0 && (c.comm != "" || c.commByID) {
		if c.commByID {
			conds = append(conds, "comm_id IN (SELECT comm_id FROM comms WHERE "+in("comm", len(f.Comms))+")")
		} else {
			conds = append(conds, in(c.comm, len(f.Comms)))
		}
		for _, p := range f.Comms {
			args = append(args, p)
		}
	}
	if f.FileGlob != "" && (c.path != "" || c.pathByID) {
		if c.pathByID {
			conds = append(conds, "(dev, ino, gen) IN (SELECT dev, ino, gen FROM file_names WHERE path GLOB ?)")
		} else {
			conds = append(conds, c.path+" GLOB ?")
		}
		args = append(args, f.FileGlob)
	}
	if f.MinSize >= 0 && c.size != "" {
		conds = append(conds, c.size+" >= ?")
		args = append(args, f.MinSize)
	}
	if f.MaxSize >= 0 && c.size != "" {
		conds = append(conds, c.size+" <= ?")
		args = append(args, f.MaxSize)
	}
	if f.Min > 0 && c.dur != "" {
		conds = append(conds, c.dur+" >= ?")
		args = append(args, uint64(f.Min))
	}
	if f.Max > 0 && c.dur != "" {
		conds = append(conds, c.dur+" <= ?")
		args = append(args, uint64(f.Max))
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

// Clock maps recording timestamps to wall time and back.
type Clock struct {
	OffsetNS  int64  // wall = mono + offset
	StartMono uint64 // recording start
	EndMono   uint64
}

func (c Clock) Wall(mono uint64) time.Time { return time.Unix(0, int64(mono)+c.OffsetNS) }

func (c Clock) Mono(t time.Time) uint64 { return uint64(t.UnixNano() - c.OffsetNS) }

// ParseTime reads a --begin/--end value: an offset from the recording start
// (+2.5s), a clock time (hh:mm:ss[.frac]) on the recording's first day, or a
// full date and time (2006-01-02 15:04:05[.frac]).
func (c Clock) ParseTime(s string, utc bool) (uint64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "+") {
		d, err := time.ParseDuration(s[1:])
		if err != nil {
			return 0, fmt.Errorf("bad offset %q: want e.g. +2.5s or +150ms", s)
		}
		return c.StartMono + uint64(d), nil
	}
	loc := time.Local
	if utc {
		loc = time.UTC
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return c.Mono(t), nil
		}
	}
	t, err := time.ParseInLocation("15:04:05.999999999", s, loc)
	if err != nil {
		return 0, fmt.Errorf("bad time %q: want hh:mm:ss[.ns], a date and time, or +offset", s)
	}
	day := c.Wall(c.StartMono).In(loc)
	t = time.Date(day.Year(), day.Month(), day.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
	return c.Mono(t), nil
}

// ParseRange reads --timerange [BEGIN,END].
func (c Clock) ParseRange(s string, utc bool) (uint64, uint64, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "["), "]")
	b, e, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, fmt.Errorf("bad time range %q: want [BEGIN,END]", s)
	}
	begin, err := c.ParseTime(b, utc)
	if err != nil {
		return 0, 0, err
	}
	end, err := c.ParseTime(e, utc)
	if err != nil {
		return 0, 0, err
	}
	if end < begin {
		return 0, 0, fmt.Errorf("time range ends before it begins")
	}
	return begin, end, nil
}
