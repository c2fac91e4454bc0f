package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/whyslow/whyslow/internal/event"
)

// Wire kinds: enum event_kind of bpf/whyslow.h, as bpf2go generates it.
const (
	evSyscall   = uint8(whyslowEventKindEV_SYSCALL)
	evFile      = uint8(whyslowEventKindEV_FILE)
	evOffCPU    = uint8(whyslowEventKindEV_OFFCPU)
	evBlock     = uint8(whyslowEventKindEV_BLOCK)
	evThrottle  = uint8(whyslowEventKindEV_THROTTLE)
	evWriteback = uint8(whyslowEventKindEV_WRITEBACK)
	evFork      = uint8(whyslowEventKindEV_FORK)
	evExec      = uint8(whyslowEventKindEV_EXEC)
	evExit      = uint8(whyslowEventKindEV_EXIT)
	evUring     = uint8(whyslowEventKindEV_URING)
	evUnlink    = uint8(whyslowEventKindEV_UNLINK)
	evConnRead  = uint8(whyslowEventKindEV_CONN_READ)
	evSample    = uint8(whyslowEventKindEV_SAMPLE)
	evStack     = uint8(whyslowEventKindEV_STACK)
	evSockBytes = uint8(whyslowEventKindEV_SOCK_BYTES)

	// PayloadLen is PAYLOAD_LEN: the first bytes of a turn kept.
	PayloadLen = len(whyslowConnReadEvent{}.Data)
	// PayloadBatchLen is PAYLOAD_BATCH_LEN: the most kept of a long read
	// that begins a turn.
	PayloadBatchLen = len(whyslowConnBatchEvent{}.Data)
)

// Flag bits of file_event.flags (FILEF_*) and block_event.rflags (BLKF_*),
// from bpf/whyslow.h.
const (
	fileNoMount   = 1
	fileDeleted   = 2
	fileTruncated = 4
	fileUnixBound = 8

	blockSync = 1
	blockMeta = 2
	blockFUA  = 4
)

const kindOffset = unsafe.Offsetof(whyslowHdr{}.Kind)

// decoder turns ring-buffer records into domain events. It interns command
// names so that a busy thread costs no allocation per event for its comm.
type decoder struct {
	comms map[[16]byte]string
	// recent holds the names met last, by a hash of their bytes: two or
	// three a record, a map lookup each (a 16-byte key, hashed) was a twentieth
	// of the recorder's CPU time at a million events a second.
	recent [256]struct {
		raw  [16]byte
		comm string
	}
	extra event.Event // a second event the last record carried
	// The high-rate events are allocated a slab at a time (slab.go), and
	// the bytes kept of server reads copied into chunks of their own.
	syscalls slab[event.Syscall]
	offcpus  slab[event.OffCPU]
	payloads slab[event.Payload]
	kept     []byte
}

// takeExtra returns the second event of the last record decoded, if any.
func (d *decoder) takeExtra() event.Event {
	x := d.extra
	d.extra = nil
	return x
}

// maxComms bounds the decoder's table of names: far more than a host runs
// at once, far less than the names a long capture meets.
const maxComms = 4096

func newDecoder() *decoder { return &decoder{comms: make(map[[16]byte]string)} }

func (d *decoder) comm(raw [16]int8) string {
	b := *(*[16]byte)(unsafe.Pointer(&raw))
	h := binary.LittleEndian.Uint64(b[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(b[8:])
	r := &d.recent[(h*0x9e3779b97f4a7c15)>>56]
	if r.raw == b { // an empty slot holds the empty name: right for zero bytes
		return r.comm
	}
	s, ok := d.comms[b]
	if !ok {
		s = text(b[:])
		if len(d.comms) >= maxComms {
			// A host that starts processes with new names for days (job
			// ids, worker-1234) would fill any table: start again, and the
			// names in use come back at once.
			clear(d.comms)
		}
		d.comms[b] = s
	}
	r.raw, r.comm = b, s
	return s
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// text is a NUL-terminated name from the kernel as text (event.EncodeText),
// so that the store, the live views and JSON all get UTF-8 and keep every
// byte. A name is encoded once, where it is read: here, in the resolver for
// a path relative to its mount, and where /proc is read (existing.go, an
// exec's cgroup). A path's components are joined first, then encoded as one.
func text(b []byte) string { return event.EncodeText(cString(b)) }

// unixPath names a unix socket's address as ss does: the path, or "@name"
// for an abstract one (a leading NUL, the rest not NUL-terminated).
func unixPath(b []byte) string {
	if len(b) > 0 && b[0] == 0 {
		return "@" + event.EncodeText(string(bytes.TrimRight(b[1:], "\x00")))
	}
	return text(b)
}

func int8s(b []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

func as[T any](raw []byte) (*T, error) {
	var zero T
	if len(raw) < int(unsafe.Sizeof(zero)) {
		return nil, fmt.Errorf("short record: %d bytes for a %T of %d", len(raw), zero, unsafe.Sizeof(zero))
	}
	return (*T)(unsafe.Pointer(unsafe.SliceData(raw))), nil
}

// asFile reads a file description, sent with only the path components the
// kernel walked (file.bpf.h): the rest of the record is zeros.
func asFile(raw []byte) (*whyslowFileEvent, error) {
	var w whyslowFileEvent
	head := int(unsafe.Offsetof(w.Names))
	if len(raw) < head {
		return nil, fmt.Errorf("short record: %d bytes for a file description of at least %d", len(raw), head)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&w)), unsafe.Sizeof(w)), raw)
	if walked := bytes.Count(raw[head:min(len(raw), head+len(w.Names))], []byte{0}); int(w.Depth) > walked {
		return nil, fmt.Errorf("file description of %d components holds %d", w.Depth, walked)
	}
	return &w, nil
}

// packedNames splits the first n names of a description, each ended by its
// NUL (asFile checked that n are there).
func packedNames(b []int8, n int) []string {
	rest := int8s(b)
	names := make([]string, 0, n)
	for len(names) < n && len(rest) > 0 {
		name, after, _ := bytes.Cut(rest, []byte{0})
		names = append(names, string(name))
		rest = after
	}
	return names
}

func (d *decoder) hdr(h *whyslowHdr) event.Header {
	return event.Header{Time: h.Ts, PID: h.Pid, TID: h.Tid, CPU: h.Cpu, Cgroup: h.Cgroup, Comm: d.comm(h.Comm)}
}

// offcpu makes a wait, or a run of short waits, into its event, and the
// call it waited in, if it carried one, into d.extra.
func (d *decoder) offcpu(w *whyslowOffcpuEvent) *event.OffCPU {
	o := d.offcpus.next()
	*o = event.OffCPU{Header: d.hdr(&w.H), Off: w.OffNs, Runq: w.RunqNs, State: byte(w.State),
		StackID: w.StackId, Syscall: w.Syscall, WakerPID: w.WakerPid, WakerTID: w.WakerTid,
		WakerComm: d.comm(w.WakerComm), FileKind: event.FileKind(w.Fkind), Outside: w.Outside != 0,
		WakerFile: fileRef(w.WakerSock.F), WakerSide: sideOf(w.WakerSock), WakerSyscall: w.WakerSock.Nr,
		Waits: w.Waits, MaxOff: w.MaxNs, RunStart: w.StartTs, Quota: w.Quota != 0}
	if o.MaxOff == 0 {
		o.MaxOff = o.Off
	}
	if o.RunStart == 0 {
		o.RunStart = o.Time - o.Off
	}
	if w.Call == 0 {
		return o
	}
	if o.Waits > 1 {
		// A run's calls, each waited in once: counted as the syscalls
		// level counts short calls, without their latencies' histogram.
		d.extra = &event.SyscallTotals{Header: event.Header{Time: o.RunStart, PID: o.PID, TID: o.TID, CPU: o.CPU, Comm: o.Comm},
			Last: o.Time, Nr: uint32(w.Syscall), File: fileRef(w.F), Count: uint64(o.Waits), TotalNS: w.OffNs, MaxNS: o.MaxOff}
		return o
	}
	// The syscalls row of a wait seen at the switch: it spans the wait.
	h := o.Header
	h.Time -= w.OffNs
	x := d.syscalls.next()
	*x = event.Syscall{Header: h, Dur: w.OffNs, Req: w.Req, FD: w.Fd, FD2: -1, Nr: uint32(w.Syscall),
		Flags: w.Flags, Blocked: true, File: fileRef(w.F)}
	d.extra = x
	return o
}

func fileRef(r whyslowFileRef) event.FileRef {
	return event.FileRef{Dev: r.Dev, Ino: r.Ino, Gen: r.Gen, Kind: event.FileKind(r.Kind)}
}

// decode turns one record into an event. It never panics on bad input: a short
// or unknown record is an error.
func (d *decoder) decode(raw []byte) (event.Event, error) {
	if len(raw) <= int(kindOffset) {
		return nil, fmt.Errorf("short record: %d bytes", len(raw))
	}
	switch raw[kindOffset] {
	case evSyscall:
		w, err := as[whyslowSyscallEvent](raw)
		if err != nil {
			return nil, err
		}
		return d.syscall(w), nil
	case evConnRead:
		return d.connRead(raw)
	case evFile:
		w, err := asFile(raw)
		if err != nil {
			return nil, err
		}
		return d.file(w), nil
	case evStack:
		w, err := as[whyslowStackEvent](raw)
		if err != nil {
			return nil, err
		}
		n := min(int(w.Depth), len(w.Ips))
		return &ownStack{Header: d.hdr(&w.H), ID: w.Id, IPs: append([]uint64(nil), w.Ips[:n]...)}, nil
	case evOffCPU:
		w, err := as[whyslowOffcpuEvent](raw)
		if err != nil {
			return nil, err
		}
		return d.offcpu(w), nil
	case evBlock:
		w, err := as[whyslowBlockEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.Block{Header: d.hdr(&w.H), InsertTime: w.InsertTs, IssueTime: w.IssueTs, Sector: w.Sector,
			Bytes: w.Bytes, Dev: w.Dev, Op: event.BlockOp(w.Op), Sync: w.Rflags&blockSync != 0,
			Meta: w.Rflags&blockMeta != 0, FUA: w.Rflags&blockFUA != 0, Error: w.Error, File: fileRef(w.F)}, nil
	case evThrottle:
		w, err := as[whyslowThrottleEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.Throttle{Header: d.hdr(&w.H), Pause: w.PauseNs, Period: w.PeriodNs, Dirtied: w.Dirtied, BDIDev: w.BdiDev}, nil
	case evWriteback:
		w, err := as[whyslowWritebackEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.Writeback{Header: d.hdr(&w.H), File: fileRef(w.F), Pages: w.Pages, Dur: w.Dur}, nil
	case evFork:
		w, err := as[whyslowForkEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.Fork{Header: d.hdr(&w.H), ChildPID: w.ChildPid, ChildTID: w.ChildTid}, nil
	case evExec:
		w, err := as[whyslowExecEvent](raw)
		if err != nil {
			return nil, err
		}
		n := min(int(w.ArgsLen), len(w.Args))
		args := strings.Split(strings.TrimRight(string(int8s(w.Args[:n])), "\x00"), "\x00")
		if n == 0 {
			args = nil
		}
		for i, a := range args {
			args[i] = event.EncodeText(a)
		}
		return &event.Exec{Header: d.hdr(&w.H), PPID: w.Ppid, Filename: text(int8s(w.Filename[:])), Args: args}, nil
	case evExit:
		w, err := as[whyslowExitEvent](raw)
		if err != nil {
			return nil, err
		}
		io := w.Io
		return &event.Exit{Header: d.hdr(&w.H), Code: w.Code, GroupDead: w.GroupDead != 0, IO: event.TaskIO{
			RChar: io.Rchar, WChar: io.Wchar, SyscR: io.Syscr, SyscW: io.Syscw,
			ReadBytes: io.ReadBytes, WriteBytes: io.WriteBytes, CancelledWriteBytes: io.CancelledWriteBytes}}, nil
	case evSockBytes:
		w, err := as[whyslowSockBytesEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.SockBytes{Header: d.hdr(&w.H), Sock: fileRef(w.F), Received: w.Received, Sent: w.Sent}, nil
	case evUring:
		w, err := as[whyslowUringEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.Uring{Header: d.hdr(&w.H), Dur: w.Dur, Res: w.Res, UserData: w.UserData, Opcode: w.Opcode,
			FD: w.Fd, File: fileRef(w.F)}, nil
	case evSample:
		w, err := as[whyslowSampleEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.Sample{Header: d.hdr(&w.H), Syscall: w.Syscall, FD: w.Fd, File: fileRef(w.F),
			Path: text(int8s(w.Path[:])), StackID: w.StackId}, nil
	case evUnlink:
		w, err := as[whyslowUnlinkEvent](raw)
		if err != nil {
			return nil, err
		}
		return &event.Unlink{Header: d.hdr(&w.H), Dur: w.Dur, Ret: w.Ret, Nr: w.Nr, Dir: fileRef(w.Dir), Name: text(int8s(w.Name[:]))}, nil
	}
	return nil, fmt.Errorf("unknown record kind %d", raw[kindOffset])
}

func (d *decoder) syscall(w *whyslowSyscallEvent) *event.Syscall {
	e := d.syscalls.next()
	*e = event.Syscall{Header: d.hdr(&w.H), Dur: w.Dur, Ret: w.Ret, Req: w.Req, FD: w.Fd, FD2: w.Fd2,
		Nr: w.Nr, Flags: w.Flags, Blocked: w.Blocked != 0, File: fileRef(w.F), File2: fileRef(w.F2)}
	return e
}

// connRead decodes a server's read on a connection, sent with its arrival
// and first bytes in one record (a conn_read_event, or a conn_batch_event:
// the same head, more data): its call, and those as a Payload in d.extra
// when it carries either.
func (d *decoder) connRead(raw []byte) (event.Event, error) {
	off := int(unsafe.Offsetof(whyslowConnReadEvent{}.Data))
	if len(raw) < off {
		return nil, fmt.Errorf("short record: %d bytes for a read on a connection of at least %d", len(raw), off)
	}
	w := (*whyslowConnReadEvent)(unsafe.Pointer(unsafe.SliceData(raw)))
	call := d.syscall(&w.Call)
	n := min(int(w.Len), len(raw)-off, PayloadBatchLen)
	if n > 0 || w.Arrived != 0 {
		p := d.payloads.next()
		*p = event.Payload{Header: call.Header, Conn: call.File, Data: d.keep(raw[off : off+n]),
			Arrived: w.Arrived, Returned: call.Ret}
		d.extra = p
	}
	return call, nil
}

// keptChunk is how many bytes of reads one chunk holds: a few hundred
// requests' worth.
const keptChunk = 64 << 10

// keep copies a read's kept bytes out of the ring into the current chunk,
// allocated a chunk at a time as the events are (a chunk stays while any
// of its reads' events is held). The copy's capacity ends with it: an
// append to it never writes over the next read's.
func (d *decoder) keep(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if cap(d.kept)-len(d.kept) < len(b) {
		d.kept = make([]byte, 0, keptChunk)
	}
	at := len(d.kept)
	d.kept = append(d.kept, b...)
	return d.kept[at:len(d.kept):len(d.kept)]
}

func (d *decoder) file(w *whyslowFileEvent) *event.File {
	f := &event.File{Header: d.hdr(&w.H), Ref: fileRef(w.F), Size: w.Size,
		Deleted: w.Flags&fileDeleted != 0, Truncated: w.Flags&fileTruncated != 0}
	parts := packedNames(w.Names[:], int(w.Depth))
	slices.Reverse(parts) // sent leaf first
	depth := len(parts)
	f.Path = "/" + strings.Join(parts, "/")
	if w.Flags&fileNoMount != 0 {
		// Completed with the mount point, then encoded, by the resolver.
		f.Path = relativePrefix + f.Path
	} else {
		f.Path = event.EncodeText(f.Path)
	}
	if depth == 0 {
		f.Path = anonName(f.Ref)
	}
	switch w.Family {
	case unix.AF_INET:
		f.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(w.Laddr[:4])), w.Lport)
		f.Peer = netip.AddrPortFrom(netip.AddrFrom4([4]byte(w.Raddr[:4])), w.Rport)
	case unix.AF_INET6:
		f.Local = netip.AddrPortFrom(netip.AddrFrom16(w.Laddr).Unmap(), w.Lport)
		f.Peer = netip.AddrPortFrom(netip.AddrFrom16(w.Raddr).Unmap(), w.Rport)
	}
	if f.Ref.Kind == event.KindSocketUnix {
		f.PeerIno, f.Bound = w.PeerIno, w.Flags&fileUnixBound != 0
		f.UnixPath = unixPath(int8s(w.UnixPath[:min(int(w.UnixLen), len(w.UnixPath))]))
	}
	return f
}

// relativePrefix marks a path known only relative to its filesystem's root.
const relativePrefix = "\x00rel:"

// anonName names files that have no path, as /proc/PID/fd does.
func anonName(r event.FileRef) string {
	switch r.Kind {
	case event.KindPipe:
		return fmt.Sprintf("pipe:[%d]", r.Ino)
	case event.KindSocketInet, event.KindSocketUnix, event.KindSocketOther:
		return fmt.Sprintf("socket:[%d]", r.Ino)
	case event.KindAnon:
		return "anon_inode"
	case event.KindBlock:
		return "[block device: metadata, journal]"
	}
	return fmt.Sprintf("inode:[%d]", r.Ino)
}
