package reports

import (
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// cols are the names of a table's or view's columns a Filter's conditions
// compare (where).
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

// whereOf is f's conditions on a table or view with the given columns, for a
// statement's {{where}} slot. Values are bound as parameters: process and
// file names never reach the SQL text.
func whereOf(f source.Filter, c cols) (string, []any) {
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

// byteSyscalls are the syscalls whose return value is bytes moved (the io
// view's bytes column), for `name IN (...)`: not accept or connect.
var byteSyscalls = event.ByteSyscallsSQL()
