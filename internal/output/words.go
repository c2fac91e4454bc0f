package output

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
)

// The sentences of explain and requests: analyses choose the facts, these
// word them. Every name and path from the recording goes through format.Safe
// here, once; the terminal, the JSON summaries and the HTML page (which
// escapes again for its own medium) all carry these same sentences.

var reasonWords = map[string]string{
	string(event.ReasonCPU):           "on CPU",
	string(event.ReasonRunqueue):      "waiting for a CPU (runnable, not running)",
	string(event.ReasonCPUQuota):      "held off the CPU by its cgroup's CPU quota (runnable, throttled)",
	string(event.ReasonMemory):        "waiting on memory reclaim (at a cgroup's memory limit, or the machine's)",
	string(event.ReasonDiskRead):      "waiting for disk reads",
	string(event.ReasonDiskWrite):     "waiting for disk writes",
	string(event.ReasonDirtyThrottle): "throttled for dirtying pages faster than the disk writes them (balance_dirty_pages)",
	string(event.ReasonSync):          "inside fsync/sync, waiting for data to reach the disk",
	string(event.ReasonNetwork):       "waiting on the network",
	string(event.ReasonLock):          "waiting on locks",
	string(event.ReasonSleep):         "sleeping (timers)",
	string(event.ReasonChild):         "waiting for child processes",
	string(event.ReasonIPC):           "waiting on pipes or unix sockets",
	string(event.ReasonOther):         "off CPU for other reasons",
	string(event.ReasonIdle):          "idle, waiting for work (accept, a poll with no request)",
}

// ReasonColors are the reasons' colours, beside their words: the HTML
// report's legend, tables and charts. A new reason is a word
// (internal/event/reason.go), a rule (internal/classify) and its words and
// colour here.
var ReasonColors = map[string]string{
	"cpu": "#4e79a7", "runqueue": "#a0cbe8", "cpu-quota": "#6a3d9a", "memory": "#cab2d6", "disk-read": "#f28e2b", "disk-write": "#e15759",
	"dirty-throttle": "#b07aa1", "sync": "#ff9da7", "network": "#76b7b2", "lock": "#edc948",
	"sleep": "#c9c9c9", "child": "#59a14f", "ipc": "#8cd17d", "other": "#9d7660", string(event.ReasonIdle): "#ececec",
}

// verdictSentence: "83% of 2.10 s waiting for disk writes: main thread
// app (tid 7) wrote 48.0 MiB to /data/out.bin".
func verdictSentence(v explain.Verdict) string {
	switch v.Kind {
	case explain.VerdictIdle:
		return fmt.Sprintf("waited for work the whole %s (accept, poll with no data): nothing was slow", format.Seconds(v.OfS))
	case explain.VerdictMixed:
		var parts []string
		for _, r := range v.Ranked {
			if r.Reason == string(event.ReasonIdle) {
				continue
			}
			if len(parts) == 3 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s", r.Reason, format.Pct(r.S/v.OfS)))
		}
		return "no single reason dominates: " + strings.Join(parts, ", ") + deviceWords(v)
	case explain.VerdictTop:
		s := fmt.Sprintf("%s of %s %s", format.Pct(v.Share), format.Seconds(v.OfS), reasonWords[v.Reason])
		if d := detailWords(v.Detail); d != "" {
			s += ": " + d
		}
		return s + saturated(v) + deviceWords(v)
	}
	return "nothing was recorded for this process"
}

// saturated adds to a CPU verdict the time spent waiting for a CPU, when
// it is a good part of the rest: the CPUs were too few for what ran (a
// build on two cores, a database with more busy backends than CPUs), which
// "on CPU" alone hides.
func saturated(v explain.Verdict) string {
	if v.Reason != string(event.ReasonCPU) || v.OfS <= 0 {
		return ""
	}
	for _, r := range v.Ranked {
		if r.Reason == string(event.ReasonRunqueue) && r.S >= 0.2*v.OfS {
			return fmt.Sprintf("; and %s %s: the CPUs were saturated", format.Pct(r.S/v.OfS), reasonWords[r.Reason])
		}
	}
	return ""
}

// detailWords names who and what for a verdict's top reason.
func detailWords(d *explain.VerdictDetail) string {
	if d == nil {
		return ""
	}
	who := actorWords(d.Who)
	if d.Via != nil {
		// "main thread pgbench (tid 1) waited on postgres (pid 2), which wrote to ..."
		who += " waited on " + actorWords(d.Via) + ", which"
	}
	switch d.Kind {
	case explain.DetailSpread:
		return spreadWords(d.Spread)
	case explain.DetailWrote:
		return wroteWords(who, d)
	case explain.DetailRead:
		return readWords(who, d)
	case explain.DetailWaited:
		s := who
		if d.Object != "" {
			s += " waited on " + format.Safe(d.Object)
		}
		if d.HeldUpBy != nil {
			s += ", held up by " + actorWords(d.HeldUpBy)
		}
		return s
	case explain.DetailPeer:
		p := d.Peer
		if !p.BytesKnown {
			return fmt.Sprintf("%s waited on %s (bytes not seen: record with --syscalls)", who, format.Safe(p.Peer))
		}
		return fmt.Sprintf("%s waited on %s (%s in, %s out)", who, format.Safe(p.Peer), format.Bytes(p.BytesIn), format.Bytes(p.BytesOut))
	case explain.DetailRan:
		return fmt.Sprintf("%s ran %s", who, format.Seconds(d.OnCPUS)) + kernelWords(d.Kernel)
	case explain.DetailQuota:
		return who + quotaWords(d.Quota)
	case explain.DetailMemory:
		if m := d.Memory; m != nil {
			return fmt.Sprintf("%s in memory cgroup %s, %s", who, format.Safe(m.Cgroup), limitWords(m))
		}
		return who
	}
	return who
}

// wroteWords says what a verdict's writer wrote (who, already worded):
// a tree of files, one file, or a group of files alike, and the part other
// processes had and the I/O limit it ran under.
func wroteWords(who string, d *explain.VerdictDetail) string {
	s := who
	switch {
	case d.Tree != nil:
		// "wrote 145.3 MiB to 2412 files under /srv/doc (the most, 8.0 MiB, to /srv/doc/all.html)"
		s += fmt.Sprintf(" wrote %s to %d files under %s", format.Bytes(d.Tree.WriteBytes), d.Tree.Files, format.Safe(d.Tree.Dir))
		if d.Path != "" && d.PathBytes > 0 {
			s += fmt.Sprintf(" (the most, %s, to %s)", format.Bytes(d.PathBytes), format.Safe(d.Path))
		}
	case d.Path != "":
		if d.PathBytes > 0 {
			s += " wrote " + format.Bytes(d.PathBytes)
		}
		s += " to " + format.Safe(d.Path)
		// The thread's total apart, when it differs as shown.
		if d.Bytes > 0 && d.PathBytes > 0 && format.Bytes(d.Bytes) != format.Bytes(d.PathBytes) {
			s += fmt.Sprintf(" (%s written in all)", format.Bytes(d.Bytes))
		}
	case d.Group != nil:
		g := d.Group
		if g.WriteBytes > 0 {
			s += " wrote " + format.Bytes(g.WriteBytes)
		}
		s += fmt.Sprintf(" to %d files %s", g.Files, format.Safe(g.Pattern))
		if g.Deleted > 0 {
			s += fmt.Sprintf(" (%d deleted before exit)", g.Deleted)
		}
	}
	if d.Blame != nil {
		s += "; other processes' part: " + blameSentence(*d.Blame)
	}
	return s + ioLimitWords(d.IOLimit, false)
}

// readWords says what a verdict's reader read (who, already worded): the
// filesystem's metadata when that is what it waited on, else its bytes and
// the file it waited on most, what was evicted and the I/O limit.
func readWords(who string, d *explain.VerdictDetail) string {
	s := who
	if m := d.Metadata; m != nil {
		// "waited on the filesystem's metadata (directories, inodes), not file data:
		// getdents64 (4222 waits, 204.9 ms), ...; 34.0 MiB of it read from disk"
		var calls []string
		for _, c := range m.Calls {
			calls = append(calls, fmt.Sprintf("%s (%d waits, %s)", format.Safe(c.Syscall), c.Waits, format.Seconds(c.S)))
		}
		s += " waited on the filesystem's metadata (directories, inodes), not file data: " + strings.Join(calls, ", ")
		if m.Bytes > 0 {
			s += fmt.Sprintf("; %s of it read from disk", format.Bytes(m.Bytes))
		}
		return s
	}
	if d.Bytes > 0 {
		s += " read " + format.Bytes(d.Bytes)
	}
	if d.Path != "" {
		s += ", most waited on " + format.Safe(d.Path)
		if d.PathBytes > 0 && format.Bytes(d.PathBytes) != format.Bytes(d.Bytes) {
			s += fmt.Sprintf(" (%s of it)", format.Bytes(d.PathBytes))
		}
	}
	return s + evictedWords(d.Evicted) + ioLimitWords(d.IOLimit, true)
}

// ioLimitWords: "; in blkio cgroup /batch, limited to 8.0 MiB/s of reads
// on loop3": the limits of the verdict's direction, none when it has none.
func ioLimitWords(l *explain.IOLimit, read bool) string {
	if l == nil {
		return ""
	}
	bps, iops, dir := l.WriteBPS, l.WriteIOPS, "writes"
	if read {
		bps, iops, dir = l.ReadBPS, l.ReadIOPS, "reads"
	}
	var lim []string
	if bps > 0 {
		lim = append(lim, format.Bytes(bps)+"/s")
	}
	if iops > 0 {
		lim = append(lim, fmt.Sprintf("%d IOPS", iops))
	}
	if len(lim) == 0 {
		return ""
	}
	kind := "blkio"
	if l.Version == "v2" {
		kind = "io"
	}
	s := fmt.Sprintf("; in %s cgroup %s, limited to %s of %s", kind, format.Safe(l.Cgroup), strings.Join(lim, " and "), dir)
	if l.Device != "" {
		s += " on " + format.Safe(l.Device)
	}
	return s
}

// evictedWords: "; re-read 512.0 MiB evicted under memory cgroup /app's
// limit (64.0 MiB)".
func evictedWords(m *explain.MemoryLimit) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf("; re-read %s evicted under memory cgroup %s's %s", format.Bytes(m.RereadBytes), format.Safe(m.Cgroup), limitWords(m))
}

// limitWords: "limit (64.0 MiB)", or "memory.high (128.0 MiB)" when that
// is the lower.
func limitWords(m *explain.MemoryLimit) string {
	if m.LimitBytes == 0 || m.HighBytes > 0 && m.HighBytes < m.LimitBytes {
		return fmt.Sprintf("memory.high (%s)", format.Bytes(m.HighBytes))
	}
	return fmt.Sprintf("limit (%s)", format.Bytes(m.LimitBytes))
}

// quotaWords: " in cgroup /docker/4f1e, limited to 0.2 CPU (20 ms every
// 100 ms): the kernel throttled it in 26 of 32 periods, 1.85 s held off".
func quotaWords(q *explain.CPUQuota) string {
	if q == nil {
		return ""
	}
	s := " in cgroup " + format.Safe(q.Cgroup)
	if q.CPUs > 0 {
		s += fmt.Sprintf(", limited to %s CPU (%s every %s)", strconv.FormatFloat(q.CPUs, 'f', -1, 64),
			format.Seconds(float64(q.QuotaUS)/1e6), format.Seconds(float64(q.PeriodUS)/1e6))
	}
	if q.ThrottledPeriods > 0 {
		s += fmt.Sprintf(": the kernel throttled it in %d of %d periods, %s held off", q.ThrottledPeriods, q.Periods, format.Seconds(q.ThrottledS))
	}
	return s
}

// actorWords: "main thread app (tid 7)", "process cc1 (pid 9)", "flock (pid 12)".
func actorWords(a *explain.Actor) string {
	if a == nil {
		return ""
	}
	comm := format.Safe(a.Comm)
	switch a.Role {
	case explain.ActorProcess:
		return fmt.Sprintf("process %s (pid %d)", comm, a.PID)
	case explain.ActorProcessThread:
		return fmt.Sprintf("thread %s (tid %d) of process %d", comm, a.TID, a.PID)
	case explain.ActorMainThread:
		return fmt.Sprintf("main thread %s (tid %d)", comm, a.TID)
	case explain.ActorThread:
		return fmt.Sprintf("thread %s (tid %d)", comm, a.TID)
	}
	return fmt.Sprintf("%s (pid %d)", comm, a.PID)
}

// spreadWords: "spread over 150 threads, in cc1 (18.2 s, 145 processes), ld (2.10 s)".
func spreadWords(s *explain.Spread) string {
	var parts []string
	for _, c := range s.Commands {
		part := fmt.Sprintf("%s (%s", format.Safe(c.Comm), format.Seconds(c.S))
		if c.Processes > 1 {
			part += fmt.Sprintf(", %d processes", c.Processes)
		}
		parts = append(parts, part+")")
	}
	return "spread over " + fmt.Sprint(s.Threads) + " threads, in " + strings.Join(parts, ", ")
}

// kernelWords: "; 64% of the CPU time in the kernel (open 1.20 s, write
// 0.40 s), mostly on 1000 files /tmp/*/*.txt created, written, deleted".
func kernelWords(k *explain.KernelTime) string {
	if k == nil {
		return ""
	}
	var parts []string
	for _, c := range k.Classes {
		parts = append(parts, fmt.Sprintf("%s %s", c.Class, format.Seconds(c.S)))
	}
	s := fmt.Sprintf("; %s of the CPU time in the kernel (%s)", format.Pct(k.Share), strings.Join(parts, ", "))
	if g := k.Group; g != nil {
		s += fmt.Sprintf(", mostly on %d files %s", g.Files, format.Safe(g.Pattern))
		var did []string
		if g.Created > 0 {
			did = append(did, "created")
		}
		if g.WriteBytes > 0 {
			did = append(did, "written")
		}
		if g.ReadBytes > 0 {
			did = append(did, "read")
		}
		if g.Deleted > 0 {
			did = append(did, "deleted")
		}
		if len(did) > 0 {
			s += " " + strings.Join(did, ", ")
		}
	}
	return s
}

// groupSentence: "/tmp/*/*.txt: 1000 files 1000 created, written, read, 1000 deleted".
func groupSentence(g explain.FileGroup) string {
	var did []string
	if g.Created > 0 {
		did = append(did, fmt.Sprintf("%d created", g.Created))
	}
	if g.WriteBytes > 0 {
		did = append(did, "written")
	}
	if g.ReadBytes > 0 {
		did = append(did, "read")
	}
	if g.Deleted > 0 {
		did = append(did, fmt.Sprintf("%d deleted", g.Deleted))
	}
	return fmt.Sprintf("%s: %d files %s", format.Safe(g.Pattern), g.Files, strings.Join(did, ", "))
}

// blameSentence says what another process did to the target, by activity.
func blameSentence(b explain.Blame) string {
	who := fmt.Sprintf("%s (pid %d)", format.Safe(b.Comm), b.PID)
	// Disk traffic during the target's storage waits.
	where := ""
	if b.Path != "" {
		where = " of " + format.Safe(b.Path)
	}
	traffic := fmt.Sprintf("%s, %s of the disk traffic during the waits", format.Bytes(b.Bytes), format.Pct(b.Share))
	// A wait on the target's critical path that it ended.
	on := ""
	if b.Object != "" {
		on = " on " + format.Safe(b.Object)
	}
	held := fmt.Sprintf("%s, %s of the wall time", format.Seconds(b.WaitS), format.Pct(b.Share))
	switch b.Activity {
	case explain.ActivitySync:
		if b.Calls > 1 {
			// The share is of the waits its calls overlapped: many short
			// ones can cover them all, which one duration would not explain.
			return fmt.Sprintf("%s ran %s() %d times (the longest %s) while the target waited on storage",
				who, b.Syscall, b.Calls, format.Dur(b.LongestNS))
		}
		return fmt.Sprintf("%s ran %s() for %s while the target waited on storage", who, b.Syscall, format.Dur(b.LongestNS))
	case explain.ActivityWhyslow:
		return fmt.Sprintf("whyslow's own recording (%s): %s", format.Safe(b.Path), traffic)
	case explain.ActivityWriteback:
		return fmt.Sprintf("writeback%s (data dirtied before the recording): %s", where, traffic)
	case explain.ActivityDirtied:
		return fmt.Sprintf("%s dirtied the data%s being written out: %s", who, where, traffic)
	case explain.ActivityWrote:
		return fmt.Sprintf("%s wrote%s directly: %s", who, where, traffic)
	case explain.ActivityRead:
		return fmt.Sprintf("%s read%s: %s", who, where, traffic)
	case explain.Activity(event.ReasonLock):
		return fmt.Sprintf("%s held the lock%s that the target waited for: %s", who, on, held)
	case explain.Activity(event.ReasonIPC):
		return fmt.Sprintf("%s was the other end of the pipe or socket%s the target waited on: %s", who, on, held)
	}
	return fmt.Sprintf("%s ended a wait (%s)%s of the target: %s", who, b.Activity, on, held)
}

// requestVerdictSentence: "91% waiting for disk writes on /data/x; /tmp/*/*.txt:
// 40 files 40 created, written; sync (pid 9) ran sync() for ...".
func requestVerdictSentence(v requests.Verdict) string {
	if v.Kind != explain.VerdictTop {
		return "nothing was recorded for it"
	}
	s := fmt.Sprintf("%s %s", format.Pct(v.Share), reasonWords[v.Reason])
	if v.Object != "" {
		s += " on " + format.Safe(v.Object)
	}
	if v.HeldUpBy != nil {
		s += ", held up by " + actorWords(v.HeldUpBy)
	}
	if v.Group != nil {
		s += "; " + groupSentence(*v.Group)
	}
	if v.Blame != nil {
		s += "; " + blameSentence(*v.Blame)
	}
	return s
}

// coverageNote: "not accounted for: 320.0 ms of the path (21%) is time
// thread app (tid 7) was neither seen waiting nor measured on a CPU; the
// verdict may be incomplete". Empty when the answer covers the wall time.
func coverageNote(x *explain.Explanation) string {
	c := x.Coverage
	if c.Covered() || c.WallS <= 0 {
		return ""
	}
	if c.UnaccountedS <= 0.01*c.WallS {
		return fmt.Sprintf("not accounted for: the critical path covers %s of the %s asked about; the verdict may be incomplete",
			format.Seconds(c.PathS), format.Seconds(c.WallS))
	}
	var who []string
	for i, th := range c.Threads {
		if i == 2 {
			who = append(who, fmt.Sprintf("%d more", len(c.Threads)-2))
			break
		}
		who = append(who, fmt.Sprintf("%s (tid %d)", format.Safe(th.Comm), th.TID))
	}
	return fmt.Sprintf("not accounted for: %s of the path (%s) is time that %s %s neither seen waiting nor measured on a CPU; the verdict may be incomplete",
		format.Seconds(c.UnaccountedS), format.Pct(c.UnaccountedS/c.WallS), strings.Join(who, ", "), pluralWas(len(c.Threads)))
}

func pluralWas(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
