package explain

import (
	"database/sql"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/critpath"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// Explanation is the answer to "where did the time go?" for one target: the
// schema whyslow.run/v1 (docs/run-json.md).
type Explanation struct {
	Schema     string        `json:"schema"`
	Target     TargetInfo    `json:"target"`
	WallS      float64       `json:"wall_s"`
	Time       TimeBreakdown `json:"time"`
	Verdict    Verdict       `json:"verdict"`
	Path       CriticalPath  `json:"critical_path"`
	Threads    []ThreadTime  `json:"threads"`
	Files      []FileUse     `json:"files"`
	FileGroups []FileGroup   `json:"file_groups"`
	Devices    []DeviceUse   `json:"devices"`
	Network    []PeerUse     `json:"network"`
	AfterExit  AfterExit     `json:"after_exit"`
	Blame      []Blame       `json:"blame"`
	// BlameOmitted counts processes left out of Blame for a share under MinBlameShare.
	BlameOmitted int `json:"blame_omitted"`
	// Coverage checks the answer against the wall time (coverage.go).
	Coverage   Coverage          `json:"coverage"`
	LostEvents uint64            `json:"lost_events"`
	Lost       map[string]uint64 `json:"lost_by_source,omitempty"`

	diskReads diskReads     // for the verdict (metadata_reads.go)
	quota     *CPUQuota     // for the verdict (cgroup_limits.go)
	memory    *MemoryLimit  // for the verdict (cgroup_limits.go)
	io        *IOLimit      // for the verdict (cgroup_limits.go)
	win       source.Window // the target's time: Mono
}

// Mono is the explained window in the recording's clock (CLOCK_MONOTONIC
// ns): the critical path's segments' BeginS count from its begin.
func (x *Explanation) Mono() (begin, end uint64) { return x.win.Begin, x.win.End }

type TargetInfo struct {
	Command  string   `json:"command"`
	PID      uint32   `json:"pid"`
	ExitCode *int     `json:"exit_code"`
	PIDs     []uint32 `json:"pids"`
}

// TimeBreakdown sums thread time: on CPU, waiting for a CPU, off CPU by reason.
// IdleS is time spent waiting for work (accept, a poll with no data I/O) or
// handing off to another traced thread or child (a join, a reply from a traced
// server): reported, but no part of the verdict.
type TimeBreakdown struct {
	OnCPUS    float64            `json:"on_cpu_s"`
	UserS     *float64           `json:"user_s,omitempty"`   // from the kernel's accounting of the process
	SystemS   *float64           `json:"system_s,omitempty"` // (rusage for run, /proc for attach)`
	RunqueueS float64            `json:"runqueue_s"`
	OffCPUS   map[string]float64 `json:"off_cpu_s"`
	// KernelCPUS is on-CPU time inside syscalls, by syscall class.
	KernelCPUS map[string]float64 `json:"kernel_cpu_s"`
	IdleS      float64            `json:"idle_s"`
	ThreadS    float64            `json:"thread_s"`
}

type Verdict struct {
	// Basis: "critical_path" (ranked adds up to the wall time), or "threads"
	// for a server whose first thread mostly waited for work (ranked is the
	// threads' summed busy time).
	Basis  string      `json:"basis"`
	Reason string      `json:"reason"`
	Share  float64     `json:"share"`
	Kind   VerdictKind `json:"kind"`
	// OfS is the seconds Share is a part of: the busy (non-idle) time, or
	// all of it for an idle verdict.
	OfS    float64        `json:"of_s"`
	Detail *VerdictDetail `json:"detail,omitempty"` // for VerdictTop
	// Device: when waits on storage were the verdict's reason or a quarter
	// of its time, the device the target's data went to, and whether it was
	// at its limit while the target waited (saturation.go).
	Device *DeviceVerdict `json:"device,omitempty"`
	// Summary is the verdict in one sentence, worded by output
	// (output.FillSummaries); analysis leaves it empty.
	Summary string   `json:"summary"`
	Ranked  []Ranked `json:"ranked"`
}

type Ranked struct {
	Reason string  `json:"reason"`
	S      float64 `json:"s"`
	Share  float64 `json:"share"`
}

type ThreadTime struct {
	PID        uint32             `json:"pid"`
	TID        uint32             `json:"tid"`
	Comm       string             `json:"comm"`
	OnCPUS     float64            `json:"on_cpu_s"`
	OffCPUS    float64            `json:"off_cpu_s"`
	IdleS      float64            `json:"idle_s"`
	ByReason   map[string]float64 `json:"by_reason"`
	ReadBytes  uint64             `json:"read_bytes"`
	WriteBytes uint64             `json:"write_bytes"`
	TopFile    string             `json:"top_file,omitempty"` // where it spent most time in syscalls
	// What it read from and wrote to TopFile.
	TopFileReadBytes  uint64 `json:"top_file_read_bytes"`
	TopFileWriteBytes uint64 `json:"top_file_write_bytes"`
	// Cgroup is its process's cgroup path (empty: not known), CgroupName
	// its short name (a container's id, a pod's uid, a systemd unit).
	Cgroup     string `json:"cgroup,omitempty"`
	CgroupName string `json:"cgroup_name,omitempty"`
}

type FileUse struct {
	Path       string  `json:"path"`
	ReadBytes  uint64  `json:"read_bytes"`
	WriteBytes uint64  `json:"write_bytes"`
	Ops        uint64  `json:"ops"`
	WaitS      float64 `json:"wait_s"`
	Created    bool    `json:"created"`
	Deleted    bool    `json:"deleted"`
}

type FileGroup struct {
	Pattern    string  `json:"pattern"`
	SyscallS   float64 `json:"syscall_s"` // time inside syscalls on its files
	Files      int     `json:"files"`
	Created    int     `json:"created"`
	Deleted    int     `json:"deleted"`
	ReadBytes  uint64  `json:"read_bytes"`
	WriteBytes uint64  `json:"write_bytes"`
	Summary    string  `json:"summary"` // worded by output
}

type DeviceUse struct {
	Name         string  `json:"name"`
	ReadBytes    uint64  `json:"read_bytes"`
	WriteBytes   uint64  `json:"write_bytes"`
	DiscardBytes uint64  `json:"discard_bytes"`
	ZeroedBytes  uint64  `json:"write_zeroes_bytes"`
	Requests     uint64  `json:"requests"`
	AwaitMS      float64 `json:"await_ms"`   // inserted to completed
	QueueMS      float64 `json:"queue_ms"`   // inserted to issued
	ServiceMS    float64 `json:"service_ms"` // issued to completed
	TargetBytes  uint64  `json:"target_bytes"`
	// StackedBytes: of its bytes, those carrying a device stacked on it (a
	// loop device's file, a dm member): the same data counted on both.
	StackedBytes uint64 `json:"stacked_bytes"`
	// The blkio throttle on the device (bytes/s, 0 for none), and the part of
	// the target's storage waits it held their I/O before the device saw it.
	ThrottleReadBPS  uint64  `json:"throttle_read_bps"`
	ThrottleWriteBPS uint64  `json:"throttle_write_bps"`
	ThrottledS       float64 `json:"throttled_s"`
	// Load is what iostat -x shows of the device over the target's window
	// (every issuer), TargetLoad the same of the target's requests alone.
	Load       DeviceLoad `json:"load"`
	TargetLoad DeviceLoad `json:"target_load"`
	// Waits is how the device did while the target waited on storage (nil:
	// it did not).
	Waits *DeviceDuringWaits `json:"during_waits,omitempty"`
	// Baseline is what `whyslow baseline` measured of the device, when the
	// recording kept it (nil: none).
	Baseline *Baseline `json:"baseline,omitempty"`
}

type PeerUse struct {
	Peer     string  `json:"peer"`
	WaitS    float64 `json:"wait_s"`
	BytesIn  uint64  `json:"bytes_in"`
	BytesOut uint64  `json:"bytes_out"`
	// BytesKnown: the bytes were seen, from the socket calls (--syscalls,
	// --full, --requests), or at the default level from the connection's
	// totals when it closed (TCP). False: not seen (a connection still
	// open, a unix socket at the default level), never "0 B".
	BytesKnown bool `json:"bytes_known"`
}

// AfterExit is what the kernel was still doing for the target once it exited.
type AfterExit struct {
	DirtyAtExitBytes uint64   `json:"dirty_at_exit_bytes"`
	WrittenBytes     uint64   `json:"written_bytes"`
	WritingS         float64  `json:"writing_s"`
	Files            []string `json:"files"`
}

// Activity is what another process did that a Blame names: one of the
// storage activities below, or, for a process that ended a wait on the
// critical path, that wait's reason (lock, ipc, other: endedWait).
type Activity string

const (
	ActivitySync      Activity = "sync"      // ran a sync call while the target waited on storage
	ActivityDirtied   Activity = "dirtied"   // dirtied the data being written out
	ActivityWriteback Activity = "writeback" // the kernel wrote out data dirtied before the recording
	ActivityWrote     Activity = "wrote"     // wrote to the disk directly
	ActivityRead      Activity = "read"      // read from the disk
	ActivityWhyslow   Activity = "whyslow"   // whyslow's own recording: counted apart, never a cause
)

// Storage says whether the activity explains storage waits.
func (a Activity) Storage() bool {
	switch a {
	case ActivitySync, ActivityDirtied, ActivityWriteback, ActivityWrote, ActivityRead:
		return true
	}
	return false
}

// endedWait is the activity of a process that ended a wait of the reason r.
func endedWait(r string) Activity { return Activity(r) }

// Blame is another process's part in the target's waits. Activity says
// which, and so which of the facts after Share are filled.
type Blame struct {
	PID      uint32   `json:"pid"`
	Comm     string   `json:"comm"`
	Activity Activity `json:"activity"`
	Share    float64  `json:"share"`
	// sync: the call it ran, how many times during the waits, and its longest.
	Syscall   string `json:"syscall,omitempty"`
	Calls     uint64 `json:"calls,omitempty"`
	LongestNS uint64 `json:"longest_ns,omitempty"`
	// Disk traffic (dirtied, writeback, wrote, read, whyslow): the bytes
	// during the waits, and the file most of them were of.
	Bytes uint64 `json:"bytes,omitempty"`
	Path  string `json:"path,omitempty"`
	// On the critical path (lock, ipc, other): the seconds of the path it
	// held up, and what the target waited on.
	WaitS  float64 `json:"wait_s,omitempty"`
	Object string  `json:"object,omitempty"`
	// Summary is the sentence, worded by output.
	Summary string `json:"summary"`
}

// Explain accounts for the time of pid and its descendants.
func Explain(s *Source, pid uint32) (*Explanation, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	pids, err := s.TargetSet(pid)
	if err != nil {
		return nil, err
	}
	x := newExplanation(s, pid, pids)
	if err := x.account(s, pids); err != nil {
		return nil, err
	}
	if err := x.explain(s, pid, pids); err != nil {
		return nil, err
	}
	x.coverage()
	x.verdict()
	return x, nil
}

// newExplanation fills what the recording's metadata says of the target:
// its command, exit code, lost events and window.
func newExplanation(s *Source, pid uint32, pids []uint32) *Explanation {
	x := &Explanation{Schema: "whyslow.run/v1", Lost: s.Lost,
		Time: TimeBreakdown{OffCPUS: map[string]float64{}, KernelCPUS: map[string]float64{}}}
	x.Target = TargetInfo{PID: pid, PIDs: pids, Command: strings.ReplaceAll(s.Meta["command"], "\x00", " ")}
	if code, err := strconv.Atoi(s.Meta["exit_code"]); err == nil && code >= 0 && s.Meta["scope"] == "command" {
		x.Target.ExitCode = &code
	}
	for src, n := range s.Lost {
		if src != event.LostRebuilt { // its waits were rebuilt: nothing is missing
			x.LostEvents += n
		}
	}
	win := s.lifeIn(pid, s.Window())
	x.WallS = float64(win.End-win.Begin) / 1e9
	x.win = win
	if x.Target.Command == "" {
		x.Target.Command = s.CommOf(pid)
	}
	return x
}

// account sums where the target's time and I/O went: its waits, threads,
// kernel CPU, files, devices, network and what was left after it exited.
func (x *Explanation) account(s *Source, pids []uint32) error {
	win := x.win
	if err := s.TargetWaits(pids, win); err != nil {
		return err
	}
	io, err := s.targetIO()
	if err != nil {
		return err
	}
	if err := x.threads(s, win, io); err != nil {
		return err
	}
	if u, err := strconv.ParseInt(s.Meta["target_user_ns"], 10, 64); err == nil {
		us, ss := float64(u)/1e9, 0.0
		if v, err := strconv.ParseInt(s.Meta["target_system_ns"], 10, 64); err == nil {
			ss = float64(v) / 1e9
		}
		x.Time.UserS, x.Time.SystemS = &us, &ss
	}
	if err := x.kernelCPU(s); err != nil {
		return err
	}
	if err := x.files(s, io); err != nil {
		return err
	}
	if err := x.devices(s, win); err != nil {
		return err
	}
	if err := x.network(s, io); err != nil {
		return err
	}
	return x.afterExit(s)
}

// explain finds what the verdict rests on: the critical path, blame, disk
// reads and the cgroup's limits.
func (x *Explanation) explain(s *Source, pid uint32, pids []uint32) error {
	win := x.win
	if err := x.criticalPath(s, pid, win); err != nil {
		return err
	}
	x.pathBlame()
	if err := x.blame(s, pids, nil, win); err != nil {
		return err
	}
	x.trimBlame()
	if err := x.loadDiskReads(s, win); err != nil {
		return err
	}
	var err error
	if x.quota, err = x.cpuQuota(s, pid); err != nil {
		return err
	}
	if x.memory, err = x.memoryLimit(s, pid); err != nil {
		return err
	}
	x.io, err = x.ioLimit(s, pid)
	return err
}

// criticalPath walks the target's main thread back from the end of the window.
func (x *Explanation) criticalPath(s *Source, pid uint32, win source.Window) error {
	w, err := critpath.Load(s.Source, win)
	if err != nil {
		return err
	}
	x.Path = w.Process(pid, func() string { return s.CommOf(pid) })
	return nil
}

func (x *Explanation) threads(s *Source, win source.Window, io targetIO) error {
	byTID := map[uint32]*ThreadTime{}
	get := func(pid, tid uint32, comm string) *ThreadTime {
		t := byTID[tid]
		if t == nil {
			t = &ThreadTime{PID: pid, TID: tid, Comm: comm, ByReason: map[string]float64{}}
			byTID[tid] = t
		}
		if t.Comm == "" {
			t.Comm = comm
		}
		return t
	}
	if s.HasRows("offcpu_raw") {
		if err := threadsOffCPU(s, win, get); err != nil {
			return err
		}
	}
	if err := threadsOnCPU(s, get); err != nil {
		return err
	}
	if io.rows {
		if err := threadsIO(s, byTID); err != nil {
			return err
		}
	}
	if err := threadsNames(s, byTID); err != nil {
		return err
	}
	if io.rows {
		if err := threadsTopFile(s, byTID); err != nil {
			return err
		}
	}
	if err := threadsCgroups(s, byTID); err != nil {
		return err
	}
	x.sumThreads(byTID)
	return nil
}

// sumThreads adds each thread's time into the breakdown, and lists the
// threads busiest first.
func (x *Explanation) sumThreads(byTID map[uint32]*ThreadTime) {
	for _, t := range byTID {
		for r, v := range t.ByReason {
			if r == string(event.ReasonRunqueue) {
				x.Time.RunqueueS += v
			} else {
				x.Time.OffCPUS[r] += v
			}
			if r != string(event.ReasonRunqueue) {
				t.OffCPUS += v
			}
		}
		x.Time.OnCPUS += t.OnCPUS
		x.Time.IdleS += t.IdleS
		x.Threads = append(x.Threads, *t)
	}
	sort.Slice(x.Threads, func(i, j int) bool {
		a, b := x.Threads[i], x.Threads[j]
		if a.OnCPUS+a.OffCPUS != b.OnCPUS+b.OffCPUS {
			return a.OnCPUS+a.OffCPUS > b.OnCPUS+b.OffCPUS
		}
		return a.TID < b.TID
	})
	x.Time.ThreadS = x.Time.OnCPUS + x.Time.RunqueueS + x.Time.IdleS
	for _, v := range x.Time.OffCPUS {
		x.Time.ThreadS += v
	}
}

// threadsOnCPU sums each thread's time on a CPU.
func threadsOnCPU(s *Source, get func(pid, tid uint32, comm string) *ThreadTime) error {
	rows, err := s.Query(sqlOf("thread_oncpu"))
	if err != nil {
		return fmt.Errorf("accounting on-CPU time: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid, tid uint32
		var comm sql.NullString
		var on float64
		if err := rows.Scan(&pid, &tid, &comm, &on); err != nil {
			return err
		}
		get(pid, tid, comm.String).OnCPUS = on / 1e9
	}
	return nil
}

// threadsNames takes each thread's name from target_threads.
func threadsNames(s *Source, byTID map[uint32]*ThreadTime) error {
	names, err := s.Query(`SELECT tid, comm FROM target_threads`)
	if err != nil {
		return fmt.Errorf("naming threads: %w", err)
	}
	defer names.Close()
	for names.Next() {
		var tid uint32
		var comm string
		if names.Scan(&tid, &comm) == nil && byTID[tid] != nil {
			byTID[tid].Comm = comm
		}
	}
	return nil
}

// threadsOffCPU sums each thread's off-CPU time by reason, and its idle time
// (thread_offcpu, sql/explain.sql, says which waits are idle).
func threadsOffCPU(s *Source, win source.Window, get func(pid, tid uint32, comm string) *ThreadTime) error {
	rows, err := s.Query(sqlOf("thread_offcpu"), sql.Named("b", win.Begin), sql.Named("e", win.End))
	if err != nil {
		return fmt.Errorf("accounting off-CPU time: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid, tid uint32
		var comm sql.NullString
		var reason, state string
		var off, runq float64
		var idle bool
		if err := rows.Scan(&pid, &tid, &comm, &reason, &state, &off, &runq, &idle); err != nil {
			return err
		}
		t := get(pid, tid, comm.String)
		t.ByReason[string(event.ReasonRunqueue)] += runq / 1e9
		if reason == string(event.ReasonRunqueue) {
			t.ByReason[reason] += off / 1e9
			continue
		}
		if idle {
			t.IdleS += off / 1e9
		} else {
			t.ByReason[reason] += off / 1e9
		}
	}
	return rows.Err()
}

// threadsIO fills each thread's bytes read and written.
func threadsIO(s *Source, byTID map[uint32]*ThreadTime) error {
	io, err := s.Query(sqlOf("thread_io"))
	if err != nil {
		return fmt.Errorf("summing thread I/O: %w", err)
	}
	defer io.Close()
	for io.Next() {
		var tid uint32
		var r, w sql.NullFloat64
		if err := io.Scan(&tid, &r, &w); err != nil {
			return err
		}
		if t := byTID[tid]; t != nil {
			t.ReadBytes, t.WriteBytes = uint64(r.Float64), uint64(w.Float64)
		}
	}
	return nil
}

// threadsTopFile names the file each thread spent most time on in syscalls.
func threadsTopFile(s *Source, byTID map[uint32]*ThreadTime) error {
	top, err := s.Query(sqlOf("thread_top_file"))
	if err != nil {
		return fmt.Errorf("finding threads' files: %w", err)
	}
	defer top.Close()
	for top.Next() {
		var tid uint32
		var path string
		var r, w float64
		if top.Scan(&tid, &path, &r, &w) == nil && byTID[tid] != nil {
			t := byTID[tid]
			t.TopFile, t.TopFileReadBytes, t.TopFileWriteBytes = path, uint64(r), uint64(w)
		}
	}
	return nil
}
