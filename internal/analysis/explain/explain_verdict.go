package explain

import (
	"sort"

	"github.com/whyslow/whyslow/internal/analysis/critpath"
	"github.com/whyslow/whyslow/internal/event"
)

// verdict ranks the reasons on the critical path and picks what its
// sentence names (output words it). Ranked seconds add up to the path, so to
// the wall time; idle (waiting for work that had not come) is ranked but is
// never the verdict.
func (x *Explanation) verdict() {
	by := x.Path.ByReason
	x.Verdict.Basis = "critical_path"
	if by[string(event.ReasonIdle)] > 0.5*x.WallS {
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
		if r != string(event.ReasonIdle) {
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
		if x.Verdict.Ranked[i].Reason != string(event.ReasonIdle) {
			top = &x.Verdict.Ranked[i]
			break
		}
	}
	if top == nil {
		if all > 0 {
			x.Verdict.Kind, x.Verdict.Reason, x.Verdict.Share, x.Verdict.OfS = VerdictIdle, string(event.ReasonIdle), 1, all
			return
		}
		x.Verdict.Kind, x.Verdict.Reason = VerdictNone, "unknown"
		return
	}
	share := top.S / busy
	x.Verdict.Reason, x.Verdict.Share, x.Verdict.OfS = top.Reason, share, busy
	var storage float64
	for _, r := range x.Verdict.Ranked {
		if event.Reason(r.Reason).Disk() {
			storage += r.S
		}
	}
	if event.Reason(top.Reason).Disk() || storage >= 0.25*busy {
		// Whoever waited, on whatever file: was the device at its limit?
		x.Verdict.Device = deviceVerdict(x.Devices, x.io)
	}
	if share < 0.5 {
		x.Verdict.Kind = VerdictMixed
		return
	}
	x.Verdict.Kind = VerdictTop
	x.Verdict.Detail = x.detail(top.Reason)
}

// pathHolder is the thread with the most critical-path time in reason, the
// object and blocking process it waited on most, and the outside process
// that spent most of the reason's time itself when outside processes spent
// most of it.
func (x *Explanation) pathHolder(reason string) (th *ThreadTime, object string, by, via *Actor) {
	perTID, perObj, perBy, perVia := map[uint32]float64{}, map[string]float64{}, map[Actor]float64{}, map[Actor]float64{}
	var all, outside float64
	for _, s := range x.Path.Segments {
		if s.Reason != reason {
			continue
		}
		all += s.DurS
		if s.Waiter() != 0 {
			perTID[s.Waiter()] += s.DurS // the target's thread that waited on the process hopped into
		} else {
			perTID[s.TID] += s.DurS
		}
		if s.Role == critpath.RoleOutside && s.OwnReason == "" {
			perVia[Actor{Role: ActorOutside, Comm: s.Comm, PID: s.PID}] += s.DurS
			outside += s.DurS
		}
		if s.Object != "" {
			perObj[s.Object] += s.DurS
		}
		if s.BlockedByPID != 0 {
			perBy[blockedBy(&s)] += s.DurS
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
	if outside*2 > all {
		via = largestActor(perVia)
	}
	return th, largest(perObj), largestActor(perBy), via
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

// detail picks who and what the verdict names for the top reason.
func (x *Explanation) detail(reason string) *VerdictDetail {
	th, object, by, via := x.pathHolder(reason)
	if x.Verdict.Basis == "threads" {
		th = x.busiestThread(reason)
	} else if spread := x.pathSpread(reason); spread != nil {
		return &VerdictDetail{Kind: DetailSpread, Spread: spread} // many processes share it: name them by command
	}
	d := &VerdictDetail{Kind: DetailWho, Who: actor(th, x.Target.PID)}
	if via != nil && x.Verdict.Basis != "threads" {
		// Spent in a server or another process it waited on: its file, not
		// the target's own.
		d.Via = via
		switch event.Reason(reason) {
		case event.ReasonDiskWrite, event.ReasonDirtyThrottle, event.ReasonSync:
			d.Kind, d.Path = DetailWrote, object
			return d
		case event.ReasonDiskRead:
			d.Kind, d.Path = DetailRead, object
			return d
		}
	}
	switch event.Reason(reason) {
	case event.ReasonDiskWrite, event.ReasonDirtyThrottle, event.ReasonSync:
		d.Kind = DetailWrote
		if th != nil && th.TopFile != "" && (len(x.FileGroups) == 0 || pathPattern(th.TopFile) != x.FileGroups[0].Pattern) {
			// The bytes go with the file they went to; the thread's total apart.
			d.Path, d.PathBytes, d.Bytes = th.TopFile, th.TopFileWriteBytes, th.WriteBytes
			if 2*d.PathBytes < d.Bytes {
				d.Tree = writtenTree(x.Files)
			}
		} else if len(x.FileGroups) > 0 {
			g := x.FileGroups[0]
			d.Group = &g
		} else if len(x.Files) > 0 {
			d.Path, d.PathBytes = x.Files[0].Path, x.Files[0].WriteBytes
		}
		for _, b := range x.Blame {
			if b.Activity != ActivityWhyslow && b.Share >= 0.25 {
				d.Blame = &b
				break
			}
		}
		d.IOLimit = x.io
	case event.ReasonDiskRead:
		d.Kind = DetailRead
		if th != nil {
			d.Bytes, d.Path, d.PathBytes = th.ReadBytes, th.TopFile, th.TopFileReadBytes
			d.Metadata = x.metadataRead(th.TID)
		}
		if x.memory != nil && x.memory.RereadBytes > 0 {
			d.Evicted = x.memory
		}
		d.IOLimit = x.io
	case event.ReasonMemory:
		d.Kind, d.Memory = DetailMemory, x.memory
	case event.ReasonLock, event.ReasonIPC, event.ReasonOther:
		d.Kind, d.Object, d.HeldUpBy = DetailWaited, object, by
	case event.ReasonNetwork:
		if len(x.Network) > 0 {
			p := x.Network[0]
			d.Kind, d.Peer = DetailPeer, &p
		} else if object != "" || by != nil {
			// No socket call seen (the default level): the peer the path
			// waited on, and the local server that answered.
			d.Kind, d.Object, d.HeldUpBy = DetailWaited, object, by
		}
	case event.ReasonCPUQuota:
		d.Kind, d.Quota = DetailQuota, x.quota
	case event.ReasonCPU:
		if th == nil {
			return nil
		}
		d.Kind, d.OnCPUS, d.Kernel = DetailRan, th.OnCPUS, x.kernelTime()
	}
	return d
}

// kernelTime is how much of the target's CPU time was in the kernel, in
// which syscalls, and on which files, when that is a large part of it.
func (x *Explanation) kernelTime() *KernelTime {
	var classes []ClassTime
	var kernel float64
	for c, v := range x.Time.KernelCPUS {
		classes = append(classes, ClassTime{c, v})
		kernel += v
	}
	share := kernel / max(x.Time.OnCPUS, 1e-9)
	if u, k := x.Time.UserS, x.Time.SystemS; u != nil && k != nil && *u+*k > 0 {
		share = *k / (*u + *k) // the kernel's own accounting, when there is one
	}
	if kernel <= 0 || share < 0.3 {
		return nil
	}
	sort.Slice(classes, func(i, j int) bool {
		return classes[i].S > classes[j].S || classes[i].S == classes[j].S && classes[i].Class < classes[j].Class
	})
	k := &KernelTime{Share: min(share, 1), Classes: []ClassTime{}}
	for _, c := range classes {
		if len(k.Classes) < 4 && c.S >= 0.05*kernel {
			k.Classes = append(k.Classes, c)
		}
	}
	if len(x.FileGroups) > 0 && x.FileGroups[0].SyscallS >= 0.3*kernel {
		g := x.FileGroups[0]
		k.Group = &g
	}
	return k
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

// pathSpread is a reason whose path time is spread over many processes (a
// build's compilers), by command: compile (18.2 s, 145 processes), link
// (2.1 s). Nil when one thread has most of it, or fewer than three processes
// share it.
func (x *Explanation) pathSpread(reason string) *Spread {
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
			return nil // one thread, or one process's threads: the detail names it
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
	spread := &Spread{Threads: len(perTID), Commands: []CommandTime{}}
	for _, c := range comms {
		u := byComm[c]
		if len(spread.Commands) == 4 || u.s < 0.05*total {
			break
		}
		spread.Commands = append(spread.Commands, CommandTime{Comm: c, S: u.s, Processes: len(u.pids)})
	}
	return spread
}
