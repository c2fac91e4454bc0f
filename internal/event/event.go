// Package event holds whyslow's domain events: what the kernel told us, in Go
// types that carry no trace of how they were captured (no cilium/ebpf import).
package event

import "net/netip"

// Header is common to every event. Time is CLOCK_MONOTONIC nanoseconds; the
// recording's clock mapping turns it into wall time once, at output.
type Header struct {
	Time   uint64
	PID    uint32 // process (tgid)
	TID    uint32 // thread
	CPU    uint8
	Cgroup uint64
	Comm   string
}

// Event is any of the types below.
type Event interface{ Hdr() *Header }

func (h *Header) Hdr() *Header { return h }

// FileRef names a file the way the kernel does. Gen tells apart files that
// reuse an inode number after a delete.
type FileRef struct {
	Dev  uint32 // kernel dev_t: major<<20 | minor
	Ino  uint64
	Gen  uint32
	Kind FileKind
}

// Known reports whether the kernel resolved a file at all.
func (r FileRef) Known() bool { return r.Ino != 0 || r.Dev != 0 }

// Syscall is one I/O syscall, entry and exit paired.
type Syscall struct {
	Header
	Dur     uint64
	Ret     int64
	Req     uint64 // bytes asked, where the syscall has such an argument
	FD, FD2 int32
	Nr      uint32
	Flags   uint32
	Blocked bool // went off CPU inside the call
	File    FileRef
	File2   FileRef
}

// File describes a file once, when whyslow first meets it.
type File struct {
	Header
	Ref       FileRef
	Path      string
	Deleted   bool
	Truncated bool
	Size      uint64
	Local     netip.AddrPort // sockets
	Peer      netip.AddrPort
	// Unix sockets: the server's address of the connection (this socket's
	// own when Bound, else its peer's; "@name" when abstract), and the other
	// end's socket inode, which pairs the two ends of a connection.
	UnixPath string
	Bound    bool
	PeerIno  uint64
}

// LocalName is the socket's own address as the files table keeps it:
// "ip:port", or a unix server's path; "" when it has none.
func (f *File) LocalName() string {
	switch {
	case f.Local.IsValid():
		return f.Local.String()
	case f.UnixPath != "" && f.Bound:
		return f.UnixPath
	}
	return ""
}

// PeerName is the other end's address: "ip:port", or the path of the unix
// server it connected to; "" when unknown.
func (f *File) PeerName() string {
	switch {
	case f.Peer.IsValid() && f.Peer.Port() != 0:
		return f.Peer.String()
	case f.UnixPath != "" && !f.Bound:
		return f.UnixPath
	}
	return ""
}

// OffCPU is an interval a thread spent off CPU; Header.Time is when it ran again.
type OffCPU struct {
	Header
	Off       uint64 // switched out until switched in
	Runq      uint64 // woken until switched in
	State     byte   // 'R' preempted, 'S', 'D', ...
	StackID   int32
	Syscall   int32 // in progress at switch-out, -1 none
	WakerPID  uint32
	WakerTID  uint32
	WakerComm string
	Reason    Reason   // filled by the classifier
	Stack     []string // kernel stack at switch-out, innermost first
	// FileKind is the kind of the file the syscall in progress names (a
	// socket, a pipe): what tells an interruptible wait, taken without stack.
	FileKind FileKind
	// Outside: the thread is a peer's, a process outside the target that the
	// target waited on (a server, a lock holder), captured while it served.
	Outside bool
	// WakerFile is the socket the waker was sending on when it woke the
	// thread (zero: none seen), and WakerSide which end of the conversation
	// it spoke from: a server's answer, or a client's request.
	WakerFile FileRef
	WakerSide Side
	// WakerSyscall is the syscall another process was in when it woke the
	// thread (kill: it signalled it), -1 none seen, WakerTimer when the
	// timer ended the wait.
	WakerSyscall int32
	// Waits is how many waits the record sums: more than one for a run of
	// short waits alike (the default level's, bpf/sched.bpf.h), whose Off and
	// Runq are sums, MaxOff the longest, and RunStart the first one's start;
	// 0 or 1 for a wait of its own.
	Waits    uint32
	MaxOff   uint64
	RunStart uint64
	// Quota: the thread was runnable but held off the CPU by its cgroup's
	// CPU quota (CFS bandwidth: cpu.cfs_quota_us, cpu.max), not by other
	// work; Runq is 0 then.
	Quota bool
}

// WakerTimer is the WakerSyscall of a wait that the local timer ended, not
// a task: a timeout's end (a poll's, a futex's), a sleep's, an itimer's
// signal (WAKER_TIMER in bpf/whyslow.h). Recordings made before it say -1.
const WakerTimer int32 = -2

// Side is the end of a conversation a process spoke from.
type Side uint8

const (
	SideUnknown Side = iota
	SideServer       // it answered: its end is the one that was connected to
	SideClient       // it asked: its end connected
)

// Block is one block request; Header names the task that issued it, Time is completion.
type Block struct {
	Header
	InsertTime      uint64
	IssueTime       uint64
	Sector          uint64
	Bytes           uint32
	Dev             uint32
	Op              BlockOp
	Sync, Meta, FUA bool
	Error           int32
	File            FileRef
}

// Throttle is one balance_dirty_pages pause.
type Throttle struct {
	Header
	Pause   uint64
	Period  uint64
	Dirtied uint64
	BDIDev  uint32
}

// Writeback is one inode written back by a flusher (Header is the flusher).
type Writeback struct {
	Header
	File  FileRef
	Pages uint64
	Dur   uint64
}

type Fork struct {
	Header
	ChildPID, ChildTID uint32
}

type Exec struct {
	Header
	PPID     uint32
	Filename string
	Args     []string
	Cgroup   string // cgroup path: on a shared host it names the service or container
	// Service is the OpenTelemetry service name it gave itself in its
	// environment (sysinfo.ServiceName), encoded as names are; "" none.
	Service string
}

// Payload is the first bytes a server read of a request (its HTTP request
// line, say), taken only when requests are captured.
type Payload struct {
	Header
	Conn FileRef // the connection's socket
	Data []byte  // the first bytes of the read the kernel kept (PayloadKept)
	// Returned is how many bytes the read returned, Data the first of
	// them; 0 when not told.
	Returned int64
	// Arrived is when the bytes reached the socket (TCP), before the
	// server read them; 0 when unknown.
	Arrived uint64
}

// ArrivalsPerConnection is a recording's meta "arrivals" when each
// Payload.Arrived is its own connection's: the kernel sends it only when its
// sequence number is where the read began, and a connection's handshake
// stamps its socket (bpf/arrival.bpf.h). Recordings without it may hold, for
// a connection's first request, the arrival of bytes of another connection
// that used the same socket's address before it.
const ArrivalsPerConnection = "connection"

// Sample is a target thread found on CPU at a local timer interrupt (the
// scheduler tick): the default level's evidence of where kernel CPU time
// goes, since no syscall is hooked. Syscall is the call it was in (-1 in
// user mode or outside any call), File or Path what that call names.
type Sample struct {
	Header
	User    bool
	Syscall int32
	FD      int32
	File    FileRef
	Path    string
	StackID int32
	Stack   []string // kernel frames, innermost first
}

// Existing is a thread that was there when capture began (attach), as /proc
// showed it: the process tree and names that no fork or exec event will tell.
type Existing struct {
	Header
	PPID    uint32
	State   byte
	Args    []string // the process's command line
	Cgroup  string   // its cgroup path, as Exec's
	Service string   // its OpenTelemetry service name, as Exec's
}

type Exit struct {
	Header
	Code      int32
	GroupDead bool
	IO        TaskIO // the thread's own I/O accounting, final
}

// TaskIO is a thread's I/O accounting as the kernel keeps it (task_struct's
// ioac; /proc/PID/task/TID/io): counted at every read and write call
// whatever the capture level, so bytes and calls are exact at no cost.
type TaskIO struct {
	RChar, WChar, SyscR, SyscW uint64 // bytes and calls of read and write syscalls, any file
	ReadBytes, WriteBytes      uint64 // brought in from storage; dirtied for it
	CancelledWriteBytes        uint64 // dirtied, then truncated away
}

// SockBytes is a TCP connection's byte totals as it closed (the kernel's
// tcp_sock counters): its bytes at the default level, which hooks no call.
type SockBytes struct {
	Header
	Sock           FileRef
	Received, Sent uint64
}

// Phases of an IOSnapshot.
const (
	IOAtStart = "start" // a thread already there when capture began
	IOAtEnd   = "end"   // a thread still there when it ended
)

// IOSnapshot is a thread's I/O accounting read from /proc when capture began
// or ended; its exit (Exit.IO) is the other end of a thread that exits.
type IOSnapshot struct {
	Header
	Phase string
	IO    TaskIO
}

// Uring is one io_uring operation from submission to completion.
type Uring struct {
	Header
	Dur      uint64
	Res      int64
	UserData uint64
	Opcode   uint32
	FD       int32
	File     FileRef
}

// SyscallTotals is the default level's in-kernel aggregate for one thread,
// file and syscall over [First, Last].
type SyscallTotals struct {
	Header  // Time = First
	Last    uint64
	Nr      uint32
	File    FileRef
	Count   uint64
	Bytes   uint64
	TotalNS uint64
	MaxNS   uint64
	Errors  uint64
	Slots   []uint64 // log2(ns) histogram
}

// CPUQuota is a cgroup's CPU quota and the kernel's counts of its
// throttling, read when a process of it was first held off the CPU by it
// (Phase QuotaFirst, Header that process's) and at the end of the capture
// (QuotaEnd).
type CPUQuota struct {
	Header
	Phase   string
	Cgroup  string // path in its hierarchy, encoded as names are (EncodeText)
	Version string // "v1" or "v2"
	// QuotaUS of CPU time per PeriodUS (-1: none); Periods, Throttled and
	// ThrottledNS are cpu.stat's nr_periods, nr_throttled and throttled time.
	QuotaUS, PeriodUS               int64
	Periods, Throttled, ThrottledNS uint64
}

// MemoryLimit is a memory cgroup's limit and the kernel's count of file
// bytes read back after its reclaim evicted them (memory.stat's
// workingset_refault_file, in bytes), read when a process of it first
// waited uninterruptibly (Phase QuotaFirst) and at the end (QuotaEnd).
type MemoryLimit struct {
	Header
	Phase   string
	Cgroup  string // encoded as names are (EncodeText)
	Version string
	// LimitBytes: the hard limit (0 none); HighBytes: v2's memory.high (0 none).
	LimitBytes, HighBytes, RefaultBytes uint64
}

// IOLimit is a process's own cgroup's I/O limits on one block device (v1
// blkio.throttle.*, v2 io.max), read at its first uninterruptible wait.
type IOLimit struct {
	Header
	Cgroup  string // encoded as names are (EncodeText)
	Version string
	Dev     uint32 // kernel dev_t
	// 0: no limit of that kind.
	ReadBPS, WriteBPS, ReadIOPS, WriteIOPS uint64
}

// The phases of a CPUQuota or MemoryLimit reading.
const (
	QuotaFirst = "first"
	QuotaEnd   = "end"
)

// Dirtied counts pages a task dirtied in an inode over [Time, Last].
type Dirtied struct {
	Header
	Last  uint64
	File  FileRef
	Pages uint64
}

// CPUTime is on-CPU time a thread accumulated since the previous sample.
type CPUTime struct {
	Header
	OnCPU uint64
}

// Unlink is a name removed from a directory (unlink, unlinkat, rmdir). Name is
// as the program passed it; Dir is the directory a relative name lives in.
type Unlink struct {
	Header
	Dur  uint64
	Ret  int64
	Nr   uint32
	Dir  FileRef
	Name string
}
