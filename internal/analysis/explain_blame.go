package analysis

import (
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// blame ranks other processes by their part in the target's storage waits
// (disk-read, disk-write, dirty-throttle, sync): those that ran a sync during
// them, and those whose data kept the disk busy then, charged to whoever
// dirtied it, not to the flusher thread that wrote it out.
//
// tids, when given, narrows the waits to those threads (a request's path).
func (x *Explanation) blame(s *Source, pids, tids []uint32, win window) error {
	if !s.hasRows("offcpu_raw") {
		return nil // no wait, no one to blame for one
	}
	// target_offcpu holds every wait of the target (io_uring's turned into
	// storage waits): most targets had none on storage. A request's path
	// (tids) may have its storage waits in an upstream outside the target.
	var storage bool
	if err := s.queryRow(`SELECT $1 OR EXISTS (SELECT 1 FROM target_offcpu WHERE reason IN (`+storageReasonsSQL+`))`,
		s.everyStep).Scan(&storage); err != nil {
		return fmt.Errorf("collecting the target's storage waits: %w", err)
	}
	if !storage && len(tids) == 0 {
		return nil
	}
	in := s.inTargets("pid", pids)
	if len(tids) > 0 {
		in += " AND " + inList("tid", tids)
	}
	waits := `CREATE OR REPLACE TEMP TABLE target_waits AS
	  SELECT greatest(start_ts, $b) AS b, least(ts, $e) AS e, least(ts, $e) - greatest(start_ts, $b) - least(runq_ns, least(ts, $e) - greatest(start_ts, $b)) AS ns
	  FROM offcpu
	  WHERE ` + in + ` AND reason IN (` + storageReasonsSQL + `) AND ts > $b AND start_ts < $e`
	if _, err := s.exec(waits, sql.Named("b", win.begin), sql.Named("e", win.end)); err != nil {
		return fmt.Errorf("collecting the target's storage waits: %w", err)
	}
	// The waits as disjoint spans (threads' waits overlap): a block request
	// then falls in at most one, found by an ASOF join. A range join of
	// requests against waits was quadratic: 4 s for 30k of each.
	spans := `CREATE OR REPLACE TEMP TABLE target_spans AS
	  WITH o AS (SELECT b, e, max(e) OVER (ORDER BY b, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_e FROM target_waits),
	       g AS (SELECT b, e, sum(CASE WHEN prev_e IS NULL OR b > prev_e THEN 1 ELSE 0 END) OVER (ORDER BY b, e) AS island FROM o)
	  SELECT min(b) AS b, max(e) AS e FROM g GROUP BY island`
	if _, err := s.exec(spans); err != nil {
		return fmt.Errorf("merging the target's storage waits: %w", err)
	}
	var total sql.NullFloat64
	s.queryRow("SELECT sum(ns) FROM target_waits").Scan(&total)
	if total.Float64 <= 0 {
		return nil
	}

	// Syncs run by others, by overlap with the waits.
	notIn := s.inTargets("r.pid", pids)
	// The sync calls first, on the numeric table: there are few.
	q := `WITH s AS (
	        SELECT r.ts, r.dur, r.pid, c.comm, n.name FROM syscall_raw r JOIN syscall_names n USING (nr) LEFT JOIN comms c USING (comm_id)
	        WHERE r.nr IN (SELECT nr FROM syscall_names WHERE class = 'sync') AND NOT (` + notIn + `))
	      SELECT s.pid, any_value(s.comm), any_value(s.name), sum(least(s.ts + s.dur, w.e) - greatest(s.ts, w.b)), max(s.dur),
	             count(DISTINCT s.ts)
	      FROM s JOIN target_waits w ON s.ts < w.e AND s.ts + s.dur > w.b GROUP BY s.pid`
	rows, err := s.query(q)
	if err != nil {
		return fmt.Errorf("finding syncs by others: %w", err)
	}
	for rows.Next() {
		var b Blame
		var name string
		var overlap, dur float64
		if err := rows.Scan(&b.PID, &b.Comm, &name, &overlap, &dur, &b.Calls); err != nil {
			rows.Close()
			return err
		}
		b.Activity, b.Syscall, b.LongestNS = "sync", name, uint64(dur)
		b.Share = min(overlap/total.Float64, 1)
		x.Blame = append(x.Blame, b)
	}
	rows.Close()

	// Disk traffic during the waits, each request charged to whoever made it
	// necessary: a write to the process that dirtied the data (not the flusher
	// thread that wrote it out), a read to the process that read. The target's
	// own requests are its own; a stacked device's lower half (a loop device's
	// backing file) is counted once, on the device above.
	q = `WITH during AS (
	       SELECT b.* FROM disk b ASOF JOIN target_spans w ON b.ts >= w.b WHERE b.ts <= w.e AND NOT b.lower),
	     dirtier AS (` + dirtierSQL + `)
	     SELECT b.op, b.pid, coalesce(b.comm, ''), d.pid, coalesce(d.comm, ''), b.path, sum(b.bytes)
	     FROM during b LEFT JOIN dirtier d ON d.dev = b.fdev AND d.ino = b.ino AND d.gen = b.gen
	     WHERE b.op IN ('read', 'write') AND b.bytes > 0
	       AND coalesce(b.fkind, '') <> 'blockdev' -- metadata and journal: everyone's, no one's fault
	     GROUP BY ALL`
	rows, err = s.query(q)
	if err != nil {
		return fmt.Errorf("charging disk traffic: %w", err)
	}
	defer rows.Close()
	target := map[uint32]bool{}
	for _, p := range pids {
		target[p] = true
	}
	type charge struct {
		Blame
		path      string
		pathBytes float64
		bytes     float64
	}
	charges := map[string]*charge{}
	var all float64
	for rows.Next() {
		var op, issuer, dcomm string
		var ipid uint32
		var dpid sql.NullInt64
		var path sql.NullString
		var bytes float64
		if err := rows.Scan(&op, &ipid, &issuer, &dpid, &dcomm, &path, &bytes); err != nil {
			return err
		}
		all += bytes
		var b Blame
		switch {
		case op == "write" && dpid.Valid:
			// A kernel thread that "dirtied" data is a layer under someone's I/O
			// (a loop device's worker, the journal), not a culprit of its own.
			if target[uint32(dpid.Int64)] || kernelThread(dcomm) {
				continue
			}
			b = Blame{PID: uint32(dpid.Int64), Comm: dcomm, Activity: "dirtied"}
		case target[ipid]:
			continue // the target's own reads and direct writes
		case op == "write" && kernelThread(issuer):
			if !path.Valid {
				continue // metadata or journal of the filesystem: everyone's writes, no owner to name
			}
			b = Blame{Comm: issuer, Activity: "writeback"}
		case kernelThread(issuer):
			continue // readahead and metadata reads of the kernel's own
		case op == "write":
			b = Blame{PID: ipid, Comm: issuer, Activity: "wrote"}
		default:
			b = Blame{PID: ipid, Comm: issuer, Activity: "read"}
		}
		key := fmt.Sprint(b.Activity, b.PID)
		if b.Activity == "writeback" {
			key += path.String // one line per file dirtied before the recording
		}
		c := charges[key]
		if c == nil {
			c = &charge{Blame: b}
			charges[key] = c
		}
		c.bytes += bytes
		if path.Valid && bytes > c.pathBytes {
			c.path, c.pathBytes = path.String, bytes
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	own := s.Meta["recording"]
	self, _ := strconv.ParseUint(s.Meta["whyslow_pid"], 10, 32)
	for _, c := range charges {
		b := c.Blame
		b.Share, b.Bytes, b.Path = c.bytes/all, uint64(c.bytes), c.path
		if b.Activity == "writeback" && own != "" && strings.HasPrefix(c.path, own) ||
			self != 0 && b.PID == uint32(self) {
			// whyslow's own recording or reads: counted apart, never a cause
			b.Activity, b.Comm = "whyslow", "whyslow"
		}
		x.Blame = append(x.Blame, b)
	}
	return nil
}

// pathBlame names the processes outside the target whose action ended a wait
// on the critical path: the holder of a lock that let go, the other end of a
// pipe. Their share is of the wall time.
func (x *Explanation) pathBlame() {
	type key struct {
		pid          uint32
		comm, reason string
		object       string
	}
	by := map[key]float64{}
	for _, s := range x.Path.Segments {
		if s.BlockedByPID != 0 {
			by[key{s.BlockedByPID, s.BlockedByComm, s.Reason, s.Object}] += s.DurS
		}
	}
	for k, d := range by {
		x.Blame = append(x.Blame, Blame{PID: k.pid, Comm: k.comm, Activity: k.reason, Share: d / max(x.WallS, 1e-9),
			WaitS: d, Object: k.object})
	}
}

// MinBlameShare: a process with a smaller part in the target's storage waits
// is noise (a checkpointer's 47 µs sync_file_range), counted but not listed.
const MinBlameShare = 0.01

// trimBlame ranks blame by share and leaves out what is under MinBlameShare.
func (x *Explanation) trimBlame() {
	sort.SliceStable(x.Blame, func(i, j int) bool {
		a, b := x.Blame[i], x.Blame[j]
		if a.Share != b.Share {
			return a.Share > b.Share
		}
		// Ties in an order of their own, not the order they were found in (maps).
		if a.Comm != b.Comm {
			return a.Comm < b.Comm
		}
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		if a.Activity != b.Activity {
			return a.Activity < b.Activity
		}
		return a.Path+a.Object < b.Path+b.Object
	})
	kept := x.Blame[:0]
	for _, b := range x.Blame {
		if b.Share >= MinBlameShare {
			kept = append(kept, b)
		} else {
			x.BlameOmitted++
		}
	}
	x.Blame = kept
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
