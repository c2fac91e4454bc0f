package analysis

import (
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/format"
)

// blame ranks other processes by their part in the target's storage waits
// (disk-read, disk-write, dirty-throttle, sync): those that ran a sync during
// them, and those whose data kept the disk busy then, charged to whoever
// dirtied it, not to the flusher thread that wrote it out.
func (x *Explanation) blame(s *Source, pids []uint32, win window) error {
	in := inList("pid", pids)
	waits := `CREATE OR REPLACE TEMP TABLE target_waits AS
	  SELECT start_ts AS b, ts AS e, off_ns - runq_ns AS ns FROM offcpu
	  WHERE ` + in + ` AND reason IN ('disk-read','disk-write','dirty-throttle','sync') AND ts > ? AND start_ts < ?`
	if _, err := s.DB.Exec(waits, win.begin, win.end); err != nil {
		return fmt.Errorf("collecting the target's storage waits: %w", err)
	}
	var total sql.NullFloat64
	s.DB.QueryRow("SELECT sum(ns) FROM target_waits").Scan(&total)
	if total.Float64 <= 0 {
		return nil
	}

	// Syncs run by others, by overlap with the waits.
	notIn := inList("s.pid", pids)
	q := `SELECT s.pid, any_value(s.comm), any_value(s.name), sum(least(s.ts + s.dur, w.e) - greatest(s.ts, w.b)), max(s.dur)
	      FROM syscalls s JOIN target_waits w ON s.ts < w.e AND s.ts + s.dur > w.b
	      WHERE s.class = 'sync' AND NOT (` + notIn + `) GROUP BY s.pid`
	rows, err := s.DB.Query(q)
	if err != nil {
		return fmt.Errorf("finding syncs by others: %w", err)
	}
	for rows.Next() {
		var b Blame
		var name string
		var overlap, dur float64
		if err := rows.Scan(&b.PID, &b.Comm, &name, &overlap, &dur); err != nil {
			rows.Close()
			return err
		}
		b.Activity = "sync"
		b.Share = min(overlap/total.Float64, 1)
		b.Summary = fmt.Sprintf("%s (pid %d) ran %s() for %s while the target waited on storage",
			format.Safe(b.Comm), b.PID, name, format.Dur(uint64(dur)))
		x.Blame = append(x.Blame, b)
	}
	rows.Close()

	// Disk traffic during the waits by its owner: the dirtier of the file, else the issuer.
	q = `WITH during AS (
	       SELECT DISTINCT b.* FROM block b JOIN target_waits w ON b.ts BETWEEN w.b AND w.e),
	     dirtier AS (
	       SELECT dev, ino, gen, arg_max(pid, pages) AS pid, arg_max(comm, pages) AS comm
	       FROM dirtied GROUP BY dev, ino, gen)
	     SELECT coalesce(d.pid, 0), coalesce(d.comm, ''), d.pid IS NULL AS undirtied,
	            any_value(f.path), sum(b.bytes), (SELECT sum(bytes) FROM during), any_value(b.comm)
	     FROM during b LEFT JOIN dirtier d ON d.dev = b.fdev AND d.ino = b.ino AND d.gen = b.gen
	          LEFT JOIN file_names f ON f.dev = b.fdev AND f.ino = b.ino AND f.gen = b.gen
	     GROUP BY 1, 2, 3, CASE WHEN d.pid IS NULL THEN coalesce(f.path, b.comm) END ORDER BY 5 DESC`
	rows, err = s.DB.Query(q)
	if err != nil {
		return fmt.Errorf("charging disk traffic: %w", err)
	}
	defer rows.Close()
	target := map[uint32]bool{}
	for _, p := range pids {
		target[p] = true
	}
	for rows.Next() {
		var b Blame
		var undirtied bool
		var path sql.NullString
		var bytes, all float64
		var issuer string
		if err := rows.Scan(&b.PID, &b.Comm, &undirtied, &path, &bytes, &all, &issuer); err != nil {
			return err
		}
		if undirtied && !path.Valid {
			if kernelThread(issuer) {
				continue // metadata or journal of the filesystem: no owner to name
			}
			b.PID, b.Comm = 0, issuer
		}
		if (!undirtied && target[b.PID]) || all == 0 || (!undirtied && kernelThread(b.Comm)) {
			// A kernel thread that "dirtied" data is a layer under someone's I/O
			// (a loop device's worker, the journal), not a culprit of its own.
			continue
		}
		b.Share = bytes / all
		if b.Share < 0.05 {
			continue
		}
		where := ""
		if path.Valid {
			where = " of " + format.Safe(path.String)
		}
		own := s.Meta["recording"]
		if undirtied && own != "" && path.Valid && strings.HasPrefix(path.String, own) {
			b.Activity, b.Comm = "whyslow", "whyslow"
			b.Summary = fmt.Sprintf("whyslow's own recording (%s): %s, %s of the disk traffic during the waits",
				format.Safe(path.String), format.Bytes(uint64(bytes)), format.Pct(b.Share))
		} else if undirtied {
			b.Activity = "writeback"
			b.Summary = fmt.Sprintf("writeback%s (data dirtied before the recording): %s, %s of the disk traffic during the waits",
				where, format.Bytes(uint64(bytes)), format.Pct(b.Share))
		} else {
			b.Activity = "dirtied"
			b.Summary = fmt.Sprintf("%s (pid %d) dirtied the data%s being written out: %s, %s of the disk traffic during the waits",
				format.Safe(b.Comm), b.PID, where, format.Bytes(uint64(bytes)), format.Pct(b.Share))
		}
		x.Blame = append(x.Blame, b)
	}
	sort.SliceStable(x.Blame, func(i, j int) bool { return x.Blame[i].Share > x.Blame[j].Share })
	return nil
}

// kernelThread recognises the kernel's own workers by name.
func kernelThread(comm string) bool {
	for _, p := range []string{"kworker/", "jbd2/", "loop", "kswapd", "ksoftirqd/", "flush-", "kcompactd", "writeback"} {
		if strings.HasPrefix(comm, p) {
			return true
		}
	}
	return false
}
