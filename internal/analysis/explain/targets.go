package explain

import (
	"fmt"
	"slices"
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
