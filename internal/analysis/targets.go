package analysis

import (
	"fmt"
	"strconv"
	"strings"
)

// targetSet is a process and every descendant: those the recording saw it
// fork, and those that existed when capture began (attach).
func (s *Source) targetSet(pid uint32) ([]uint32, error) {
	if !s.hasRows("forks") && !s.hasRows("existing") {
		return []uint32{pid}, nil
	}
	rows, err := s.DB.Query(`SELECT pid, child_pid FROM forks WHERE child_pid <> pid
	  UNION SELECT DISTINCT ppid, pid FROM existing WHERE ppid <> pid`)
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

// inList renders "col IN (1, 2)". Pids are integers, so they are written as
// literals; strings from a recording are always bound as parameters instead.
func inList(col string, ids []uint32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatUint(uint64(id), 10)
	}
	return col + " IN (" + strings.Join(parts, ",") + ")"
}
