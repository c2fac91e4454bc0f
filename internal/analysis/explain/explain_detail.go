package explain

// The facts a verdict's sentence is made of. Analyses choose them (which
// thread, which file, which culprit, what passes a threshold); output words
// them (internal/output/words.go). Names and paths stay as the traced program
// gave them: output makes them safe for a terminal, once.

// VerdictKind is the shape of a verdict's sentence.
type VerdictKind string

const (
	// VerdictTop: one reason had the largest part ("83% of 2.1 s waiting for
	// disk writes"), said with its Detail. A request's verdict is always this
	// one, or VerdictNone.
	VerdictTop VerdictKind = "top"
	// VerdictMixed: no reason had half of the busy time; Ranked says which.
	VerdictMixed VerdictKind = "mixed"
	// VerdictIdle: the target only waited for work.
	VerdictIdle VerdictKind = "idle"
	// VerdictNone: nothing was recorded for it.
	VerdictNone VerdictKind = "none"
)

// DetailKind says what a verdict's detail tells, and so which of its fields
// are filled.
type DetailKind string

const (
	DetailWho    DetailKind = "who"    // only Who (run-queue, sleep, child waits)
	DetailSpread DetailKind = "spread" // Spread: many processes shared the time
	DetailWrote  DetailKind = "wrote"  // storage writes: Who wrote PathBytes to Path (Bytes in all), or to Group; Blame
	DetailRead   DetailKind = "read"   // disk reads: Who read Bytes, most waited on Path (PathBytes of it); Evicted
	DetailWaited DetailKind = "waited" // lock, ipc, other: Who waited on Object, held up by HeldUpBy
	DetailPeer   DetailKind = "peer"   // network: Who waited on Peer
	DetailRan    DetailKind = "ran"    // cpu: Who ran OnCPUS; Kernel
	DetailQuota  DetailKind = "quota"  // cpu-quota: Who was held off by Quota (nil: its cgroup not read)
	DetailMemory DetailKind = "memory" // memory: Who reclaimed under Memory's limit (nil: no limited cgroup read)
)

// VerdictDetail is what a verdict names beyond its reason: who spent the
// time, and on what.
type VerdictDetail struct {
	Kind DetailKind `json:"kind"`
	// Who spent most of the reason's time: on the critical path, or over all
	// threads for basis "threads".
	Who    *Actor  `json:"who,omitempty"`
	Spread *Spread `json:"spread,omitempty"`
	// Path is the file written to or most waited on; PathBytes what went to
	// or came from it, Bytes what Who wrote or read in all.
	Path      string `json:"path,omitempty"`
	PathBytes uint64 `json:"path_bytes,omitempty"`
	Bytes     uint64 `json:"bytes,omitempty"`
	// Group is the files written in bulk, when they, not one file, were the target's.
	Group *FileGroup `json:"file_group,omitempty"`
	// Tree is the files written under one directory, when Path took less
	// than half of what Who wrote (an archive unpacked, a build's outputs).
	Tree *FileTree `json:"tree,omitempty"`
	// Metadata is Who's disk reads when most of their time was the
	// filesystem's own (directories, inodes), not a file's data.
	Metadata *MetadataRead `json:"metadata,omitempty"`
	Object   string        `json:"object,omitempty"`
	HeldUpBy *Actor        `json:"held_up_by,omitempty"`
	Peer     *PeerUse      `json:"peer,omitempty"`
	OnCPUS   float64       `json:"on_cpu_s,omitempty"`
	Kernel   *KernelTime   `json:"kernel,omitempty"`
	// Blame is other processes' part in storage waits, when it is large: a
	// copy of an entry of the explanation's blame.
	Blame *Blame `json:"blame,omitempty"`
	// Evicted: Who's reads were in part re-reads of pages its memory
	// cgroup's limit had evicted.
	Evicted *MemoryLimit `json:"evicted,omitempty"`
	// IOLimit is the I/O limit of the target's own cgroup on a device it
	// used (storage verdicts: wrote, read).
	IOLimit *IOLimit `json:"io_limit,omitempty"`
	// Memory is the limited memory cgroup Who reclaimed in.
	Memory *MemoryLimit `json:"memory,omitempty"`
	// Quota is the cgroup CPU quota that held Who off the CPU.
	Quota *CPUQuota `json:"cpu_quota,omitempty"`
	// Via is the process outside the target where most of the reason's time
	// was spent, when it was (the server whose fsync a client waited on):
	// Who waited on it, and Path is then its file.
	Via *Actor `json:"via,omitempty"`
}

// ActorRole is how a thread or process stands to the target.
type ActorRole string

const (
	ActorMainThread    ActorRole = "main_thread"    // the target's first thread
	ActorThread        ActorRole = "thread"         // another thread of the target
	ActorProcess       ActorRole = "process"        // a descendant process (its first thread)
	ActorProcessThread ActorRole = "process_thread" // another thread of a descendant
	ActorOutside       ActorRole = "outside"        // a process outside the target
)

// Actor is a thread or process a sentence names.
type Actor struct {
	Role ActorRole `json:"role"`
	Comm string    `json:"comm"`
	PID  uint32    `json:"pid"`
	TID  uint32    `json:"tid,omitempty"`
}

// Spread is a reason's path time spread over many processes (a build's
// compilers): the commands that had the most of it.
type Spread struct {
	Threads int `json:"threads"`
	// Commands: at most four, each with at least 5% of the time.
	Commands []CommandTime `json:"commands"`
}

type CommandTime struct {
	Comm      string  `json:"comm"`
	S         float64 `json:"s"`
	Processes int     `json:"processes"`
}

// KernelTime is the part of the target's CPU time spent in the kernel, when
// large: in which syscalls, and on which files.
type KernelTime struct {
	Share float64 `json:"share"`
	// Classes: the largest syscall classes, at most four, each with at
	// least 5% of the kernel time.
	Classes []ClassTime `json:"classes"`
	// Group: the files a large part of it was spent on.
	Group *FileGroup `json:"file_group,omitempty"`
}

type ClassTime struct {
	Class string  `json:"class"`
	S     float64 `json:"s"`
}

// actor names thread th by how it stands to the target pid.
func actor(th *ThreadTime, target uint32) *Actor {
	if th == nil {
		return nil
	}
	a := &Actor{Comm: th.Comm, PID: th.PID, TID: th.TID}
	switch {
	case th.PID != target && th.TID == th.PID:
		a.Role = ActorProcess
	case th.PID != target:
		a.Role = ActorProcessThread
	case th.TID == th.PID:
		a.Role = ActorMainThread
	default:
		a.Role = ActorThread
	}
	return a
}

// largestActor is the actor with the most time in m; ties go to the lower
// name, then pid, so the choice does not follow map order.
func largestActor(m map[Actor]float64) *Actor {
	var best *Actor
	for a, v := range m {
		if best == nil || v > m[*best] || v == m[*best] && (a.Comm < best.Comm || a.Comm == best.Comm && a.PID < best.PID) {
			a := a
			best = &a
		}
	}
	return best
}

// blockedBy is the actor that held up a segment: a process outside the
// target, or a thread of the waiter's own (BlockedByTID).
func blockedBy(s *PathSegment) Actor {
	if s.BlockedByTID != 0 {
		return Actor{Role: ActorThread, Comm: s.BlockedByComm, PID: s.BlockedByPID, TID: s.BlockedByTID}
	}
	return Actor{Role: ActorOutside, Comm: s.BlockedByComm, PID: s.BlockedByPID}
}

// PathObject is what the path p waited on most for reason, and who held it
// up (a request's verdict names them).
func PathObject(p CriticalPath, reason string) (object string, by *Actor) {
	perObj, perBy := map[string]float64{}, map[Actor]float64{}
	for _, s := range p.Segments {
		if s.Reason != reason {
			continue
		}
		if s.Object != "" {
			perObj[s.Object] += s.DurS
		}
		if s.BlockedByPID != 0 {
			perBy[blockedBy(&s)] += s.DurS
		}
	}
	return largest(perObj), largestActor(perBy)
}
