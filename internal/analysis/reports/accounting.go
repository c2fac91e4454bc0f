package reports

import (
	"database/sql"
	"fmt"
	"slices"
	"sort"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// ProcessAccount is a process's I/O as the kernel accounts it (task_struct's
// ioac, what /proc/PID/io shows), over the recording: the bytes and calls of
// every read and write syscall, on any file, socket or pipe, counted by the
// kernel at each call. Exact at every level, the default's included, which
// hooks no syscall. (Time filters do not narrow it: it is read at the
// start, at each thread's exit and at the end.)
type ProcessAccount struct {
	PID        uint32 `json:"pid"`
	Comm       string `json:"comm"`
	ReadBytes  uint64 `json:"read_bytes"` // rchar: any read, the page cache's included
	WriteBytes uint64 `json:"write_bytes"`
	ReadCalls  uint64 `json:"read_calls"`
	WriteCalls uint64 `json:"write_calls"`
	// FromStorage is what it made the kernel read from storage; ToStorage
	// what it dirtied for storage, less what it truncated before writeback.
	FromStorage uint64 `json:"from_storage"`
	ToStorage   uint64 `json:"to_storage"`
}

// accountingCols filter task_io by process.
var accountingCols = cols{pid: "pid", tid: "tid", comm: "comm"}

// accounting sums each process's threads: for each thread, its last reading
// (at its exit, or the end) less its first (at the start; 0 for a thread
// born during the recording, whose accounting began at 0).
func accounting(s *source.Source, f source.Filter) ([]ProcessAccount, error) {
	nf := source.Filter{PIDs: f.PIDs, TIDs: f.TIDs, Comms: f.Comms}
	where, args := whereOf(nf, accountingCols)
	rows, err := s.Query(sqlWhere("usage_accounting", where), append(args, f.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("summing the kernel's I/O accounting: %w", err)
	}
	defer rows.Close()
	var out []ProcessAccount
	for rows.Next() {
		var p ProcessAccount
		var v [6]sql.NullFloat64
		var comm sql.NullString
		if err := rows.Scan(&p.PID, &comm, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]); err != nil {
			return nil, err
		}
		p.Comm = comm.String
		p.ReadBytes, p.WriteBytes, p.ReadCalls, p.WriteCalls = u64(v[0]), u64(v[1]), u64(v[2]), u64(v[3])
		p.FromStorage, p.ToStorage = u64(v[4]), u64(v[5])
		out = append(out, p)
	}
	return out, rows.Err()
}

// storageFiles adds to u.Files what the kernel saw of each file at every
// level: pages dirtied by writes (the dirtied table), and bytes read from
// storage for it (block requests). A file known only from these joins the
// list; the list is ranked again and cut to f.Limit.
func storageFiles(s *source.Source, u *Usage, f source.Filter) error {
	dirtied := source.Filter{PIDs: f.PIDs, TIDs: f.TIDs, Comms: f.Comms, FileGlob: f.FileGlob, Begin: f.Begin, End: f.End, MinSize: -1, MaxSize: -1}
	dwhere, dargs := whereOf(dirtied, cols{ts: "d.ts", end: "d.last_ts", pid: "d.pid", tid: "d.tid", comm: "d.comm", path: "f.path"})
	bwhere, bargs := whereOf(dirtied, cols{ts: "insert_ts", end: "ts", pid: "pid", tid: "tid", comm: "comm", path: "path"})
	rows, err := s.Query(sqlWhere("usage_storage_files", dwhere, bwhere), append(dargs, bargs...)...)
	if err != nil {
		return fmt.Errorf("summing files' storage I/O: %w", err)
	}
	defer rows.Close()
	at := map[string]int{}
	for i, fi := range u.Files {
		at[fi.Path] = i
	}
	for rows.Next() {
		var path string
		var d, r sql.NullFloat64
		var users []any
		if err := rows.Scan(&path, &d, &r, &users); err != nil {
			return err
		}
		i, ok := at[path]
		if !ok {
			i = len(u.Files)
			at[path] = i
			u.Files = append(u.Files, FileIO{Path: path})
		}
		fi := &u.Files[i]
		fi.Dirtied, fi.FromStorage = u64(d), u64(r)
		if !ok {
			for _, x := range users {
				if s, ok := x.(string); ok && !slices.Contains(fi.Users, s) {
					fi.Users = append(fi.Users, s)
				}
			}
			slices.Sort(fi.Users)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	size := func(fi FileIO) uint64 { return max(fi.Read+fi.Write, fi.Dirtied+fi.FromStorage) }
	sort.SliceStable(u.Files, func(i, j int) bool {
		a, b := size(u.Files[i]), size(u.Files[j])
		return a > b || a == b && u.Files[i].Path < u.Files[j].Path
	})
	if f.Limit > 0 && len(u.Files) > f.Limit {
		u.Files = u.Files[:f.Limit]
	}
	return nil
}
