package analysis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
)

var reasonWords = map[string]string{
	string(event.ReasonCPU):           "on CPU",
	string(event.ReasonRunqueue):      "waiting for a CPU (runnable, not running)",
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
}

// verdict ranks the reasons on the critical path and writes the summary
// sentence. Ranked seconds add up to the path, so to the wall time; idle
// (waiting for work that had not come) is ranked but is never the verdict.
func (x *Explanation) verdict() {
	by := x.Path.ByReason
	x.Verdict.Basis = "critical_path"
	if by["idle"] > 0.5*x.WallS {
		// A server: its first thread waited for work, and the work was done
		// by others, request by request. Over the whole window there is no
		// one path; the verdict is over all threads' busy time.
		x.Verdict.Basis = "threads"
		by = map[string]float64{"cpu": x.Time.OnCPUS, "runqueue": x.Time.RunqueueS}
		for r, v := range x.Time.OffCPUS {
			by[r] += v
		}
	}
	var busy, all float64
	for r, v := range by {
		all += v
		if r != "idle" {
			busy += v
		}
	}
	for r, v := range by {
		if v > 0 {
			x.Verdict.Ranked = append(x.Verdict.Ranked, Ranked{Reason: r, S: v, Share: v / max(all, 1e-9)})
		}
	}
	sort.Slice(x.Verdict.Ranked, func(i, j int) bool {
		a, b := x.Verdict.Ranked[i], x.Verdict.Ranked[j]
		return a.S > b.S || a.S == b.S && a.Reason < b.Reason
	})
	var top *Ranked
	for i := range x.Verdict.Ranked {
		if x.Verdict.Ranked[i].Reason != "idle" {
			top = &x.Verdict.Ranked[i]
			break
		}
	}
	if top == nil {
		if all > 0 {
			x.Verdict.Reason, x.Verdict.Share = "idle", 1
			x.Verdict.Summary = fmt.Sprintf("waited for work the whole %s (accept, poll with no data): nothing was slow", format.Seconds(all))
			return
		}
		x.Verdict.Reason, x.Verdict.Summary = "unknown", "nothing was recorded for this process"
		return
	}
	share := top.S / busy
	x.Verdict.Reason, x.Verdict.Share = top.Reason, share
	head := fmt.Sprintf("%s of %s %s", format.Pct(share), format.Seconds(busy), reasonWords[top.Reason])
	if share < 0.5 {
		var parts []string
		for _, r := range x.Verdict.Ranked {
			if r.Reason == "idle" {
				continue
			}
			if len(parts) == 3 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s", r.Reason, format.Pct(r.S/busy)))
		}
		x.Verdict.Summary = "no single reason dominates: " + strings.Join(parts, ", ")
		return
	}
	if detail := x.detail(top.Reason); detail != "" {
		head += ": " + detail
	}
	x.Verdict.Summary = head
}

// pathThread is the thread with the most critical-path time in reason, and
// the object and blocking process it waited on most.
func (x *Explanation) pathHolder(reason string) (th *ThreadTime, object, by string) {
	perTID, perObj, perBy := map[uint32]float64{}, map[string]float64{}, map[string]float64{}
	for _, s := range x.Path.Segments {
		if s.Reason != reason {
			continue
		}
		perTID[s.TID] += s.DurS
		if s.Object != "" {
			perObj[s.Object] += s.DurS
		}
		if s.BlockedByPID != 0 {
			perBy[fmt.Sprintf("%s (pid %d)", format.Safe(s.BlockedByComm), s.BlockedByPID)] += s.DurS
		}
	}
	var tid uint32
	for t, v := range perTID {
		if v > perTID[tid] || v == perTID[tid] && t < tid {
			tid = t
		}
	}
	for i := range x.Threads {
		if x.Threads[i].TID == tid {
			th = &x.Threads[i]
		}
	}
	return th, largest(perObj), largest(perBy)
}

func largest(m map[string]float64) string {
	best := ""
	for k, v := range m {
		if v > m[best] || v == m[best] && k < best {
			best = k
		}
	}
	return best
}

// detail names who and what for the top reason.
func (x *Explanation) detail(reason string) string {
	th, object, by := x.pathHolder(reason)
	if x.Verdict.Basis == "threads" {
		th = x.busiestThread(reason)
	} else if spread := x.pathSpread(reason); spread != "" {
		return spread // many processes share it: name them by command
	}
	who := ""
	if th != nil {
		switch {
		case th.PID != x.Target.PID && th.TID == th.PID:
			who = fmt.Sprintf("process %s (pid %d)", format.Safe(th.Comm), th.PID)
		case th.PID != x.Target.PID:
			who = fmt.Sprintf("thread %s (tid %d) of process %d", format.Safe(th.Comm), th.TID, th.PID)
		case th.TID == th.PID:
			who = fmt.Sprintf("main thread %s (tid %d)", format.Safe(th.Comm), th.TID)
		default:
			who = fmt.Sprintf("thread %s (tid %d)", format.Safe(th.Comm), th.TID)
		}
	}
	switch event.Reason(reason) {
	case event.ReasonDiskWrite, event.ReasonDirtyThrottle, event.ReasonSync:
		s := who
		if th != nil && th.TopFile != "" && (len(x.FileGroups) == 0 || pathPattern(th.TopFile) != x.FileGroups[0].Pattern) {
			// The bytes go with the file they went to; the thread's total apart.
			if th.TopFileWriteBytes > 0 {
				s += " wrote " + format.Bytes(th.TopFileWriteBytes)
			}
			s += " to " + format.Safe(th.TopFile)
			if th.TopFileWriteBytes > 0 && format.Bytes(th.WriteBytes) != format.Bytes(th.TopFileWriteBytes) {
				s += fmt.Sprintf(" (%s written in all)", format.Bytes(th.WriteBytes))
			}
		} else if len(x.FileGroups) > 0 {
			g := x.FileGroups[0]
			if g.WriteBytes > 0 {
				s += " wrote " + format.Bytes(g.WriteBytes)
			}
			s += fmt.Sprintf(" to %d files %s", g.Files, format.Safe(g.Pattern))
			if g.Deleted > 0 {
				s += fmt.Sprintf(" (%d deleted before exit)", g.Deleted)
			}
		} else if len(x.Files) > 0 {
			if x.Files[0].WriteBytes > 0 {
				s += " wrote " + format.Bytes(x.Files[0].WriteBytes)
			}
			s += " to " + format.Safe(x.Files[0].Path)
		}
		for _, b := range x.Blame {
			if b.Activity != "whyslow" && b.Share >= 0.25 {
				s += "; other processes' part: " + b.Summary
				break
			}
		}
		return s
	case event.ReasonDiskRead:
		s := who
		if th != nil && th.ReadBytes > 0 {
			s += " read " + format.Bytes(th.ReadBytes)
		}
		if th != nil && th.TopFile != "" {
			s += ", most waited on " + format.Safe(th.TopFile)
			if th.TopFileReadBytes > 0 && format.Bytes(th.TopFileReadBytes) != format.Bytes(th.ReadBytes) {
				s += fmt.Sprintf(" (%s of it)", format.Bytes(th.TopFileReadBytes))
			}
		}
		return s
	case event.ReasonLock, event.ReasonIPC, event.ReasonOther:
		s := who
		if object != "" {
			s += " waited on " + format.Safe(object)
		}
		if by != "" {
			s += ", held up by " + by
		}
		return s
	case event.ReasonNetwork:
		if len(x.Network) > 0 {
			p := x.Network[0]
			return fmt.Sprintf("%s waited on %s (%s in, %s out)", who, format.Safe(p.Peer), format.Bytes(p.BytesIn), format.Bytes(p.BytesOut))
		}
		return who
	case event.ReasonCPU:
		if th != nil {
			return fmt.Sprintf("%s ran %s", who, format.Seconds(th.OnCPUS)) + x.kernelPart()
		}
	}
	return who
}

// kernelPart says how much of the target's CPU time was in the kernel, in
// which syscalls, and on which files, when that is a large part of it.
func (x *Explanation) kernelPart() string {
	type class struct {
		name string
		s    float64
	}
	var classes []class
	var kernel float64
	for c, v := range x.Time.KernelCPUS {
		classes = append(classes, class{c, v})
		kernel += v
	}
	share := kernel / max(x.Time.OnCPUS, 1e-9)
	if u, k := x.Time.UserS, x.Time.SystemS; u != nil && k != nil && *u+*k > 0 {
		share = *k / (*u + *k) // the kernel's own accounting, when there is one
	}
	if kernel <= 0 || share < 0.3 {
		return ""
	}
	sort.Slice(classes, func(i, j int) bool {
		return classes[i].s > classes[j].s || classes[i].s == classes[j].s && classes[i].name < classes[j].name
	})
	var parts []string
	for _, c := range classes {
		if len(parts) < 4 && c.s >= 0.05*kernel {
			parts = append(parts, fmt.Sprintf("%s %s", c.name, format.Seconds(c.s)))
		}
	}
	s := fmt.Sprintf("; %s of the CPU time in the kernel (%s)", format.Pct(min(share, 1)), strings.Join(parts, ", "))
	if len(x.FileGroups) > 0 && x.FileGroups[0].SyscallS >= 0.3*kernel {
		g := x.FileGroups[0]
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

// busiestThread is the thread with the most time in reason, over all threads.
func (x *Explanation) busiestThread(reason string) *ThreadTime {
	var best *ThreadTime
	val := func(t *ThreadTime) float64 {
		if reason == "cpu" {
			return t.OnCPUS
		}
		return t.ByReason[reason]
	}
	for i := range x.Threads {
		if best == nil || val(&x.Threads[i]) > val(best) {
			best = &x.Threads[i]
		}
	}
	return best
}

// pathSpread words a reason whose path time is spread over many processes
// (a build's compilers), by command: "in compile (18.2 s, 145 processes),
// link (2.1 s)". Empty when one thread has most of it, or fewer than three
// processes share it.
func (x *Explanation) pathSpread(reason string) string {
	type use struct {
		s    float64
		pids map[uint32]bool
	}
	byComm := map[string]*use{}
	perTID := map[uint32]float64{}
	var total float64
	for _, s := range x.Path.Segments {
		if s.Reason != reason {
			continue
		}
		u := byComm[s.Comm]
		if u == nil {
			u = &use{pids: map[uint32]bool{}}
			byComm[s.Comm] = u
		}
		u.s += s.DurS
		u.pids[s.PID] = true
		perTID[s.TID] += s.DurS
		total += s.DurS
	}
	pids := map[uint32]bool{}
	for _, u := range byComm {
		for p := range u.pids {
			pids[p] = true
		}
	}
	for _, v := range perTID {
		if v >= 0.5*total || len(pids) < 3 {
			return "" // one thread, or one process's threads: the detail names it
		}
	}
	comms := make([]string, 0, len(byComm))
	for c := range byComm {
		comms = append(comms, c)
	}
	sort.Slice(comms, func(i, j int) bool {
		a, b := byComm[comms[i]], byComm[comms[j]]
		return a.s > b.s || a.s == b.s && comms[i] < comms[j]
	})
	var parts []string
	for _, c := range comms {
		u := byComm[c]
		if len(parts) == 4 || u.s < 0.05*total {
			break
		}
		part := fmt.Sprintf("%s (%s", format.Safe(c), format.Seconds(u.s))
		if len(u.pids) > 1 {
			part += fmt.Sprintf(", %d processes", len(u.pids))
		}
		parts = append(parts, part+")")
	}
	return "spread over " + fmt.Sprint(len(perTID)) + " threads, in " + strings.Join(parts, ", ")
}
