package reports

import (
	"database/sql"
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// Usage is iousagetop: who read and wrote how much, split by kind of file.
type Usage struct {
	// Accounting is the kernel's own count of each process's reads and
	// writes: exact at every level.
	Accounting []ProcessAccount `json:"accounting"`
	Processes  []ProcessIO      `json:"processes"`
	Files      []FileIO         `json:"files"`
	Block      []BlockIO        `json:"block"`
	Network    []IfaceIO        `json:"network"`
	Exact      bool             `json:"exact"` // false: a default-level recording; bytes are exact, fds are not known for aggregated calls
	// Calls: the recording holds read and write calls (--syscalls, --full,
	// or --requests for sockets): processes' split by kind of file, and the
	// files' read and written bytes, come from them. Without, a file's
	// bytes are those it had dirtied and read from storage.
	Calls bool `json:"calls"`
}

type ProcessIO struct {
	PID        uint32 `json:"pid"`
	Comm       string `json:"comm"`
	ReadFile   uint64 `json:"read_file"`
	ReadNet    uint64 `json:"read_net"`
	ReadIPC    uint64 `json:"read_ipc"`
	ReadOther  uint64 `json:"read_other"`
	WriteFile  uint64 `json:"write_file"`
	WriteNet   uint64 `json:"write_net"`
	WriteIPC   uint64 `json:"write_ipc"`
	WriteOther uint64 `json:"write_other"`
}

func (p ProcessIO) Read() uint64  { return p.ReadFile + p.ReadNet + p.ReadIPC + p.ReadOther }
func (p ProcessIO) Write() uint64 { return p.WriteFile + p.WriteNet + p.WriteIPC + p.WriteOther }

type FileIO struct {
	Path  string `json:"path"`
	Read  uint64 `json:"read"`  // by read calls (needs calls: Usage.Calls)
	Write uint64 `json:"write"` // by write calls
	// Dirtied is what writes left in its page cache for storage, and
	// FromStorage what reading it brought in from storage: known at every
	// level (the kernel's dirtying and block requests).
	Dirtied     uint64   `json:"dirtied"`
	FromStorage uint64   `json:"from_storage"`
	Users       []string `json:"users"` // "fd 14 in apache2 (31591)"
}

// BlockIO is block traffic by process: as issued, and charged to whoever
// dirtied the data (a flusher's writeback goes to the process that wrote it).
type BlockIO struct {
	PID          uint32 `json:"pid"`
	Comm         string `json:"comm"`
	Read         uint64 `json:"read"`
	WriteIssued  uint64 `json:"write_issued"`
	WriteCharged uint64 `json:"write_charged"`
}

type IfaceIO struct {
	Interface string `json:"interface"`
	Received  uint64 `json:"received"`
	Sent      uint64 `json:"sent"`
}

// RunUsage computes usage under a filter.
func RunUsage(s *source.Source, f source.Filter) (*Usage, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	u := &Usage{Exact: s.Full(), Calls: s.Meta["level"] != "waits" || s.Meta["requests"] == "true"}
	if u.Accounting, err = accounting(s, f); err != nil {
		return nil, err
	}
	if err := usageCalls(s, f); err != nil {
		return nil, err
	}
	if u.Processes, err = usageProcesses(s, f); err != nil {
		return nil, err
	}
	if u.Files, err = usageFiles(s, f); err != nil {
		return nil, err
	}
	if err := storageFiles(s, u, f); err != nil {
		return nil, err
	}
	if u.Block, err = usageBlock(s, f); err != nil {
		return nil, err
	}
	if u.Network, err = usageNetwork(s); err != nil {
		return nil, err
	}
	return u, nil
}

// usageProcesses are each process's bytes read and written, by traffic
// (file, net, ipc, other), from usage_io (usageCalls).
func usageProcesses(s *source.Source, f source.Filter) ([]ProcessIO, error) {
	rows, err := s.Query(sqlOf("usage_processes"), sql.Named("limit", f.Limit))
	if err != nil {
		return nil, fmt.Errorf("summing process I/O: %w", err)
	}
	defer rows.Close()
	var out []ProcessIO
	for rows.Next() {
		var p ProcessIO
		var v [8]sql.NullFloat64
		if err := rows.Scan(&p.PID, &p.Comm, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]); err != nil {
			return nil, err
		}
		p.ReadFile, p.ReadNet, p.ReadIPC, p.ReadOther = u64(v[0]), u64(v[1]), u64(v[2]), u64(v[3])
		p.WriteFile, p.WriteNet, p.WriteIPC, p.WriteOther = u64(v[4]), u64(v[5]), u64(v[6]), u64(v[7])
		out = append(out, p)
	}
	return out, nil
}

// usageFiles are each file's bytes read and written, from usage_io, with
// who used it.
func usageFiles(s *source.Source, f source.Filter) ([]FileIO, error) {
	rows, err := s.Query(sqlOf("usage_files"), sql.Named("limit", f.Limit))
	if err != nil {
		return nil, fmt.Errorf("summing file I/O: %w", err)
	}
	defer rows.Close()
	var out []FileIO
	for rows.Next() {
		var fi FileIO
		var r, w sql.NullFloat64
		var users []any
		if err := rows.Scan(&fi.Path, &r, &w, &users); err != nil {
			return nil, err
		}
		fi.Read, fi.Write = u64(r), u64(w)
		for _, x := range users {
			if s, ok := x.(string); ok {
				fi.Users = append(fi.Users, s)
			}
		}
		out = append(out, fi)
	}
	return out, nil
}

// usageBlock is block I/O by process: what each issued, and the writes
// charged to it as the data's dirtier.
func usageBlock(s *source.Source, f source.Filter) ([]BlockIO, error) {
	bwhere, bargs := whereOf(f, diskCols)
	rows, err := s.Query(sqlWhere("usage_block", bwhere), append(bargs, f.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("summing block I/O: %w", err)
	}
	defer rows.Close()
	var out []BlockIO
	for rows.Next() {
		var b BlockIO
		var r, w, c sql.NullFloat64
		if err := rows.Scan(&b.PID, &b.Comm, &r, &w, &c); err != nil {
			return nil, err
		}
		b.Read, b.WriteIssued, b.WriteCharged = u64(r), u64(w), u64(c)
		out = append(out, b)
	}
	return out, nil
}

// usageNetwork is socket bytes by network interface, from usage_io.
func usageNetwork(s *source.Source) ([]IfaceIO, error) {
	rows, err := s.Query(sqlOf("usage_network"))
	if err != nil {
		return nil, fmt.Errorf("summing network I/O: %w", err)
	}
	defer rows.Close()
	var out []IfaceIO
	for rows.Next() {
		var n IfaceIO
		var name sql.NullString
		var r, w sql.NullFloat64
		if err := rows.Scan(&name, &r, &w); err != nil {
			return nil, err
		}
		n.Interface, n.Received, n.Sent = name.String, u64(r), u64(w)
		if n.Interface == "" {
			n.Interface = "unknown"
		}
		out = append(out, n)
	}
	return out, nil
}

// totalsIOCols filter the kernel's aggregates as the io view's columns do:
// a row's latency is its slowest call, its size its bytes.
var totalsIOCols = cols{ts: "ts", end: "last_ts", pid: "pid", tid: "tid", comm: "comm", size: "bytes", dur: "max_ns", pathByID: true}

// usageCalls makes the temp table usage_io: the io view's rows under f,
// summed per process, thread, file, fd and syscall. Streamed calls are summed
// on the numeric table first and named after, a few rows instead of millions.
func usageCalls(s *source.Source, f source.Filter) error {
	where, args := whereOf(f, rawCols)
	twhere, targs := whereOf(f, totalsIOCols)
	if _, err := s.Exec(sqlWhere("usage_io", where, twhere), append(args, targs...)...); err != nil {
		return fmt.Errorf("summing calls: %w", err)
	}
	return nil
}

func u64(v sql.NullFloat64) uint64 { return uint64(v.Float64) }
