package explain

import (
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// blame ranks other processes by their part in the target's storage waits
// (disk-read, disk-write, dirty-throttle, sync): those that ran a sync during
// them, and those whose data kept the disk busy then, charged to whoever
// dirtied it, not to the flusher thread that wrote it out.
//
// tids, when given, narrows the waits to those threads (a request's path).
func (x *Explanation) blame(s *Source, pids, tids []uint32, win source.Window) error {
	total, err := storageWaits(s, pids, tids, win)
	if err != nil || total <= 0 {
		return err
	}
	syncs, err := blameSyncs(s, pids, total)
	if err != nil {
		return err
	}
	x.Blame = append(x.Blame, syncs...)
	disk, err := blameDisk(s, pids)
	if err != nil {
		return err
	}
	x.Blame = append(x.Blame, disk...)
	return nil
}

// storageWaits collects the target's storage waits into target_waits and
// target_spans and returns their seconds in ns; 0 when there is none to
// blame anyone for.
func storageWaits(s *Source, pids, tids []uint32, win source.Window) (float64, error) {
	if !s.HasRows("offcpu_raw") {
		return 0, nil // no wait, no one to blame for one
	}
	// target_offcpu holds every wait of the target (io_uring's turned into
	// storage waits): most targets had none on storage. A request's path
	// (tids) may have its storage waits in an upstream outside the target.
	var storage bool
	if err := s.QueryRow(sqlOf("blame_has_storage_waits"), s.EveryStep).Scan(&storage); err != nil {
		return 0, fmt.Errorf("collecting the target's storage waits: %w", err)
	}
	if !storage && len(tids) == 0 {
		return 0, nil
	}
	var only any // NULL: every thread of the target
	if len(tids) > 0 {
		only = tids
	}
	if err := s.run("target_waits", sql.Named("b", win.Begin), sql.Named("e", win.End), sql.Named("pids", pids), sql.Named("tids", only)); err != nil {
		return 0, fmt.Errorf("collecting the target's storage waits: %w", err)
	}
	if err := s.run("target_spans"); err != nil {
		return 0, fmt.Errorf("merging the target's storage waits: %w", err)
	}
	var total sql.NullFloat64
	s.QueryRow("SELECT sum(ns) FROM target_waits").Scan(&total)
	return total.Float64, nil
}

// blameSyncs names the syncs run by others, by their overlap with the
// waits (total ns).
func blameSyncs(s *Source, pids []uint32, total float64) ([]Blame, error) {
	rows, err := s.Query(sqlOf("blame_syncs"), sql.Named("pids", pids))
	if err != nil {
		return nil, fmt.Errorf("finding syncs by others: %w", err)
	}
	defer rows.Close()
	var out []Blame
	for rows.Next() {
		var b Blame
		var name string
		var overlap, dur float64
		if err := rows.Scan(&b.PID, &b.Comm, &name, &overlap, &dur, &b.Calls); err != nil {
			return nil, err
		}
		b.Activity, b.Syscall, b.LongestNS = ActivitySync, name, uint64(dur)
		b.Share = min(overlap/total, 1)
		out = append(out, b)
	}
	return out, nil
}

// diskCharge is the disk traffic charged to one Blame, and the file most
// of it was of.
type diskCharge struct {
	Blame
	path      string
	pathBytes float64
	bytes     float64
}

// blameDisk charges the disk traffic during the waits, each request to
// whoever made it necessary: a write to the process that dirtied the data,
// a read to the process that read. The target's own requests are its own.
func blameDisk(s *Source, pids []uint32) ([]Blame, error) {
	rows, err := s.Query(sqlOf("blame_disk"))
	if err != nil {
		return nil, fmt.Errorf("charging disk traffic: %w", err)
	}
	defer rows.Close()
	target := map[uint32]bool{}
	for _, p := range pids {
		target[p] = true
	}
	charges := map[string]*diskCharge{}
	var all float64
	for rows.Next() {
		var op, issuer, dcomm string
		var ipid uint32
		var dpid sql.NullInt64
		var path sql.NullString
		var bytes float64
		if err := rows.Scan(&op, &ipid, &issuer, &dpid, &dcomm, &path, &bytes); err != nil {
			return nil, err
		}
		all += bytes
		b, ok := chargedTo(op, ipid, issuer, dpid, dcomm, path, target)
		if !ok {
			continue
		}
		key := fmt.Sprint(b.Activity, b.PID)
		if b.Activity == ActivityWriteback {
			key += path.String // one line per file dirtied before the recording
		}
		c := charges[key]
		if c == nil {
			c = &diskCharge{Blame: b}
			charges[key] = c
		}
		c.bytes += bytes
		if path.Valid && bytes > c.pathBytes {
			c.path, c.pathBytes = path.String, bytes
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	own := s.Meta["recording"]
	self, _ := strconv.ParseUint(s.Meta["whyslow_pid"], 10, 32)
	var out []Blame
	for _, c := range charges {
		b := c.Blame
		b.Share, b.Bytes, b.Path = c.bytes/all, uint64(c.bytes), c.path
		if b.Activity == ActivityWriteback && own != "" && strings.HasPrefix(c.path, own) ||
			self != 0 && b.PID == uint32(self) {
			// whyslow's own recording or reads: counted apart, never a cause
			b.Activity, b.Comm = ActivityWhyslow, "whyslow"
		}
		out = append(out, b)
	}
	return out, nil
}

// chargedTo says whom one disk request is charged to (ok false: no one
// outside the target, or no owner to name).
func chargedTo(op string, ipid uint32, issuer string, dpid sql.NullInt64, dcomm string, path sql.NullString, target map[uint32]bool) (Blame, bool) {
	switch {
	case op == "write" && dpid.Valid:
		// A kernel thread that "dirtied" data is a layer under someone's I/O
		// (a loop device's worker, the journal), not a culprit of its own.
		if target[uint32(dpid.Int64)] || kernelThread(dcomm) {
			return Blame{}, false
		}
		return Blame{PID: uint32(dpid.Int64), Comm: dcomm, Activity: ActivityDirtied}, true
	case target[ipid]:
		return Blame{}, false // the target's own reads and direct writes
	case op == "write" && kernelThread(issuer):
		if !path.Valid {
			return Blame{}, false // metadata or journal of the filesystem: everyone's writes, no owner to name
		}
		return Blame{Comm: issuer, Activity: ActivityWriteback}, true
	case kernelThread(issuer):
		return Blame{}, false // readahead and metadata reads of the kernel's own
	case op == "write":
		return Blame{PID: ipid, Comm: issuer, Activity: ActivityWrote}, true
	default:
		return Blame{PID: ipid, Comm: issuer, Activity: ActivityRead}, true
	}
}

// BlameOf is the blame of a part of the target's time that is not its
// whole life (a request's): those that ended a wait on its path p, of
// wallS seconds, and those that had a part in the storage waits of its
// threads tids of the processes pids over win, ranked and trimmed as an
// explanation's.
func BlameOf(s *Source, p CriticalPath, wallS float64, pids, tids []uint32, win source.Window) ([]Blame, error) {
	x := &Explanation{WallS: wallS, Path: p}
	x.pathBlame()
	if err := x.blame(s, pids, tids, win); err != nil {
		return nil, err
	}
	x.trimBlame()
	return x.Blame, nil
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
		x.Blame = append(x.Blame, Blame{PID: k.pid, Comm: k.comm, Activity: endedWait(k.reason), Share: d / max(x.WallS, 1e-9),
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
