package explain

import (
	"database/sql"
	"fmt"
	"slices"
	"strconv"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// TargetSet is a process and every descendant: those the recording saw it
// fork, and those that existed when capture began (attach).
func (s *Source) TargetSet(pid uint32) ([]uint32, error) {
	if !s.HasRows("forks") && !s.HasRows("existing") {
		return []uint32{pid}, nil
	}
	rows, err := s.Query(sqlOf("target_children"))
	if err != nil {
		return nil, fmt.Errorf("reading forks: %w", err)
	}
	defer rows.Close()
	children := map[uint32][]uint32{}
	for rows.Next() {
		var p, c uint32
		if err := rows.Scan(&p, &c); err != nil {
			return nil, err
		}
		children[p] = append(children[p], c)
	}
	out := []uint32{pid}
	seen := map[uint32]bool{pid: true}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// useTargets makes target_pids, the target's processes as a table, which
// queries join (is_target, source/sql/macros.sql). An IN list of literals took DuckDB ~2 ms to plan
// for a build's 425 pids, in some twenty queries; the join plans in a
// fraction of that and runs as fast: DuckDB pushes the pids it finds into
// the scan of the big table (dynamic join filters), as it would literals.
func (s *Source) useTargets(pids []uint32) error {
	s.targets = nil
	if err := s.run("target_pids", pids); err != nil {
		return fmt.Errorf("listing the target's processes: %w", err)
	}
	s.targets = slices.Clone(pids)
	return nil
}

// Parents maps each process the recording saw forked, or found at its
// start, to its parent.
func (s *Source) Parents() (map[uint32]uint32, error) {
	out := map[uint32]uint32{}
	if !s.HasRows("forks") && !s.HasRows("existing") {
		return out, nil
	}
	rows, err := s.Query(sqlOf("target_children"))
	if err != nil {
		return nil, fmt.Errorf("reading forks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p, c uint32
		if err := rows.Scan(&p, &c); err != nil {
			return nil, err
		}
		out[c] = p
	}
	return out, rows.Err()
}

// Window is the target's lifetime in the recording.
func (s *Source) Window() source.Window {
	w := source.Window{Begin: s.Clock.StartMono, End: s.Clock.EndMono}
	if v, _ := strconv.ParseUint(s.Meta["target_start_mono"], 10, 64); v != 0 {
		w.Begin = v
	}
	if v, _ := strconv.ParseUint(s.Meta["target_end_mono"], 10, 64); v != 0 {
		w.End = v
	}
	if w.End < w.Begin {
		w.End = w.Begin
	}
	return w
}

// lifeIn narrows win to the life of pid when pid is not the recording's
// own target (report explain --pid on a system-wide recording): from its
// fork to its exit (its last thread's, which need not be the main one: Go's),
// where the recording saw them.
func (s *Source) lifeIn(pid uint32, win source.Window) source.Window {
	if p, _ := strconv.ParseUint(s.Meta["target_pid"], 10, 32); uint32(p) == pid {
		return win
	}
	var born, died sql.NullInt64
	s.QueryRow(sqlOf("process_life"), sql.Named("pid", pid)).Scan(&born, &died)
	if born.Valid && uint64(born.Int64) > win.Begin && uint64(born.Int64) < win.End {
		win.Begin = uint64(born.Int64)
	}
	if died.Valid && uint64(died.Int64) < win.End && uint64(died.Int64) > win.Begin {
		win.End = uint64(died.Int64)
	}
	return win
}

// CommOf is the name the recording knows process pid by ("" for none).
func (s *Source) CommOf(pid uint32) string {
	var c sql.NullString
	s.QueryRow("SELECT comm FROM processes WHERE pid = ?", pid).Scan(&c)
	return c.String
}
