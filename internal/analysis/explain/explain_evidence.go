package explain

import (
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// kernelCPU splits the target's time inside syscalls, less the time it was
// off CPU there, by syscall class: the kernel's part of its CPU time
// (sql/explain.sql).
func (x *Explanation) kernelCPU(s *Source) error {
	q := "kernel_cpu"
	if s.WaitsOnly() {
		if !s.HasRows("samples") {
			return nil
		}
		q = "kernel_cpu_sampled"
	}
	rows, err := s.Query(sqlOf(q))
	if err != nil {
		return fmt.Errorf("splitting kernel time: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var class string
		var ns float64
		if err := rows.Scan(&class, &ns); err != nil {
			return err
		}
		if ns > 0 {
			x.Time.KernelCPUS[class] = ns / 1e9
		}
	}
	return rows.Err()
}

// files: per file the target touched, bytes, operations and time inside syscalls.
func (x *Explanation) files(s *Source, io targetIO) error {
	if !io.rows {
		return nil
	}
	created := "target_created"
	if s.WaitsOnly() {
		created = "target_created_waits"
	}
	if err := s.run(created); err != nil {
		return fmt.Errorf("finding the files the target created: %w", err)
	}
	rows, err := s.Query(sqlOf("file_use"))
	if err != nil {
		return fmt.Errorf("summing file use: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f FileUse
		var r, w, ops, wait sql.NullFloat64
		if err := rows.Scan(&f.Path, &r, &w, &ops, &wait, &f.Created, &f.Deleted); err != nil {
			return err
		}
		f.ReadBytes, f.WriteBytes, f.Ops, f.WaitS = uint64(r.Float64), uint64(w.Float64), uint64(ops.Float64), wait.Float64/1e9
		x.Files = append(x.Files, f)
	}
	sort.Slice(x.Files, func(i, j int) bool {
		a, b := x.Files[i], x.Files[j]
		if a.WaitS != b.WaitS {
			return a.WaitS > b.WaitS
		}
		if a.ReadBytes+a.WriteBytes != b.ReadBytes+b.WriteBytes {
			return a.ReadBytes+a.WriteBytes > b.ReadBytes+b.WriteBytes
		}
		return a.Path < b.Path
	})
	x.FileGroups = GroupFiles(x.Files)
	// A file known only from CPU samples (the kernel's time on it, at the
	// default level) counts in its group, but is not listed alone: no wait,
	// no byte, no operation was seen on it.
	listed := x.Files[:0]
	for _, f := range x.Files {
		if f.Ops > 0 || f.ReadBytes > 0 || f.WriteBytes > 0 {
			listed = append(listed, f)
		}
	}
	x.Files = listed
	return nil
}

// GroupFiles folds files whose paths differ only in generated parts (uuids,
// numbers, hex) into patterns: /tmp/*/*.txt, 1000 files.
func GroupFiles(files []FileUse) []FileGroup {
	groups := map[string]*FileGroup{}
	for _, f := range files {
		p := pathPattern(f.Path)
		if p == f.Path {
			continue
		}
		g := groups[p]
		if g == nil {
			g = &FileGroup{Pattern: p}
			groups[p] = g
		}
		g.Files++
		g.ReadBytes += f.ReadBytes
		g.WriteBytes += f.WriteBytes
		g.SyscallS += f.WaitS
		if f.Created {
			g.Created++
		}
		if f.Deleted {
			g.Deleted++
		}
	}
	var out []FileGroup
	for _, g := range groups {
		if g.Files < 3 {
			continue
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Files > out[j].Files })
	return out
}

// pathPattern replaces generated components with *: /tmp/1f0e.../17.txt -> /tmp/*/*.txt.
func pathPattern(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p == "" {
			continue
		}
		stem, ext := p, ""
		if j := strings.LastIndexByte(p, '.'); j > 0 {
			stem, ext = p[:j], p[j:]
		}
		if generated(stem) {
			parts[i] = "*" + ext
		}
	}
	return strings.Join(parts, "/")
}

func generated(s string) bool {
	if s == "" {
		return false
	}
	digits, hex, other := 0, 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-':
			hex++
		default:
			other++
		}
	}
	if other == 0 && hex == 0 {
		return true // a number
	}
	return other == 0 && len(s) >= 8 && digits > 0 // uuid or hex id
}

// throttle reads the device's blkio limits and, when it has one and the
// target's data went to it, estimates the time the target's storage waits
// spent held by the throttle: waited, with none of its requests at the
// device. (No tracepoint fires when a bio enters the throttle.)
func (d *DeviceUse) throttle(s *Source, dev uint32, win source.Window) error {
	var rbps, wbps sql.NullInt64
	s.QueryRow("SELECT max(throttle_read_bps), max(throttle_write_bps) FROM devices WHERE dev = ?", dev).Scan(&rbps, &wbps)
	d.ThrottleReadBPS, d.ThrottleWriteBPS = uint64(rbps.Int64), uint64(wbps.Int64)
	if d.ThrottleReadBPS == 0 && d.ThrottleWriteBPS == 0 || d.TargetBytes == 0 {
		return nil
	}
	var held sql.NullFloat64
	if err := s.QueryRow(sqlOf("device_throttled"), sql.Named("b", win.Begin), sql.Named("e", win.End), sql.Named("dev", dev)).Scan(&held); err != nil {
		return fmt.Errorf("estimating throttle waits: %w", err)
	}
	d.ThrottledS = held.Float64 / 1e9
	return nil
}

// network: per peer, bytes each way and time inside socket syscalls.
// network sums the target's traffic by peer. A socket met first in /proc (a
// connection older than an attach) is of a family /proc does not tell
// (socket-other) until the end's description names its addresses.
func (x *Explanation) network(s *Source, io targetIO) error {
	if !io.rows {
		return nil
	}
	rows, err := s.Query(sqlOf("peer_use"))
	if err != nil {
		return fmt.Errorf("summing network: %w", err)
	}
	defer rows.Close()
	calls := !s.WaitsOnly() || s.Meta["requests"] == "true"
	for rows.Next() {
		var p PeerUse
		var bi, bo, wait sql.NullFloat64
		if err := rows.Scan(&p.Peer, &bi, &bo, &wait); err != nil {
			return err
		}
		p.BytesIn, p.BytesOut, p.WaitS, p.BytesKnown = uint64(bi.Float64), uint64(bo.Float64), wait.Float64/1e9, calls
		x.Network = append(x.Network, p)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if calls {
		return nil
	}
	return x.closedConnections(s)
}

// closedConnections gives the default level's peers the bytes the kernel
// counted on their TCP connections (tcp_bytes: each connection's totals as
// it closed), where no socket call was hooked to count them.
func (x *Explanation) closedConnections(s *Source) error {
	if len(x.Network) == 0 {
		return nil
	}
	rows, err := s.Query(sqlOf("peer_closed_bytes"))
	if err != nil {
		return fmt.Errorf("reading connections' byte totals: %w", err)
	}
	defer rows.Close()
	at := map[string]int{}
	for i, p := range x.Network {
		at[p.Peer] = i
	}
	for rows.Next() {
		var peer string
		var r, w sql.NullFloat64
		var conns int
		if err := rows.Scan(&peer, &r, &w, &conns); err != nil {
			return err
		}
		if i, ok := at[peer]; ok && conns > 0 {
			p := &x.Network[i]
			p.BytesIn, p.BytesOut, p.BytesKnown = uint64(r.Float64), uint64(w.Float64), true
		}
	}
	return rows.Err()
}

// afterExit: writeback of inodes the target dirtied, after it exited.
func (x *Explanation) afterExit(s *Source) error {
	fmt.Sscan(s.Meta["dirty_at_exit"], &x.AfterExit.DirtyAtExitBytes)
	if !s.HasRows("dirtied") || !s.HasRows("block_raw") {
		return nil
	}
	end := s.Window().End
	var bytes, span sql.NullFloat64
	var paths string
	row := s.QueryRow(sqlOf("after_exit"), sql.Named("end", end))
	if err := row.Scan(&bytes, &span, &paths); err != nil && err != sql.ErrNoRows {
		return fmt.Errorf("finding writeback after exit: %w", err)
	}
	x.AfterExit.WrittenBytes = uint64(bytes.Float64)
	if span.Valid && span.Float64 > 0 {
		x.AfterExit.WritingS = span.Float64 / 1e9
	}
	for _, p := range strings.Split(paths, "\n") {
		if p != "" && len(x.AfterExit.Files) < 10 {
			x.AfterExit.Files = append(x.AfterExit.Files, p)
		}
	}
	return nil
}
