package store

import (
	"fmt"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// loads holds every table's load but meta's (written through SQL).
type loads struct {
	files, syscalls, secondFiles, comms, syscallNames, kinds, syscallTotals, offcpuRaw, stacks,
	blockRaw, throttle, writeback, dirtied, cputime, forks, execs, exits, taskIO, tcpBytes, payloads, samples, procSamples,
	existing, uring, unlinkRaw, lost, devices, interfaces, cpuQuotas, memoryLimits, ioLimits *tableLoad
	all []*tableLoad
}

// byName names each field as schema.go names its table.
func (l *loads) byName() map[string]**tableLoad {
	return map[string]**tableLoad{
		"files_raw": &l.files, "syscall_packed": &l.syscalls, "syscall_second_file": &l.secondFiles, "comms": &l.comms, "syscall_names": &l.syscallNames,
		"kinds": &l.kinds, "syscall_totals_raw": &l.syscallTotals, "offcpu_raw": &l.offcpuRaw,
		"stacks": &l.stacks, "block_raw": &l.blockRaw, "throttle": &l.throttle, "writeback": &l.writeback,
		"dirtied": &l.dirtied, "cputime": &l.cputime, "forks": &l.forks, "execs": &l.execs, "exits": &l.exits,
		"task_io": &l.taskIO, "tcp_bytes": &l.tcpBytes, "payloads": &l.payloads, "samples": &l.samples, "proc_samples_raw": &l.procSamples, "existing": &l.existing, "uring_raw": &l.uring,
		"unlink_raw": &l.unlinkRaw, "lost": &l.lost, "devices": &l.devices, "interfaces": &l.interfaces,
		"cpu_quotas": &l.cpuQuotas, "memory_limits": &l.memoryLimits, "io_limits": &l.ioLimits,
	}
}

// openLoads opens a load for every table of the schema but meta and the
// derived tables (written through SQL).
func openLoads(c *loadConn) (*loads, error) {
	l := &loads{}
	fields := l.byName()
	for _, t := range tables {
		if t.name == "meta" || IsDerived(t.name) {
			continue
		}
		f := fields[t.name]
		if f == nil {
			l.close()
			return nil, fmt.Errorf("opening loads: table %s has none", t.name)
		}
		tl, err := newTableLoad(c.conn, t.name)
		if err != nil {
			l.close()
			return nil, err
		}
		*f = tl
		l.all = append(l.all, tl)
	}
	return l, nil
}

// loaded says whether any table has rows not yet flushed.
func (l *loads) loaded() bool {
	for _, t := range l.all {
		if t.n > 0 || t.pending > 0 {
			return true
		}
	}
	return false
}

// close frees every load, and returns the first error of each.
func (l *loads) close() []error {
	var errs []error
	for _, t := range l.all {
		if err := t.close(); err != nil {
			errs = append(errs, err)
		}
	}
	l.all = nil
	return errs
}

// filled says which tables the loads added rows to, by table name, and the
// syscall_raw view by syscall_packed's.
func (l *loads) filled() map[string]bool {
	out := map[string]bool{}
	for name, f := range l.byName() {
		if *f != nil && (*f).rows > 0 {
			out[name] = true
		}
	}
	out["syscall_raw"] = out["syscall_packed"]
	return out
}

// dimensions writes the small tables that name the numbers of high-rate rows.
func (w *Writer) dimensions() error {
	for nr, n := range event.SyscallNames() {
		if err := w.t.syscallNames.row().u16(uint16(nr)).str(n[0]).str(n[1]).end(); err != nil {
			return err
		}
	}
	for _, k := range event.FileKinds() {
		if err := w.t.kinds.row().u8(uint8(k)).str(k.String()).end(); err != nil {
			return err
		}
	}
	return nil
}

// commSlot caches a thread's command name and the name's id in comms:
// looking a name up by its string (hashed) and a thread's last name up by its
// id were a visible part of every row's cost.
type commSlot struct {
	tid  uint32
	comm string
	id   uint32
	ok   bool
}

// headerCommID is the id of the command name of h: its own, or its thread's
// last one when it carries none.
func (w *Writer) headerCommID(h *event.Header) (uint32, error) {
	s := &w.threads[h.TID%uint32(len(w.threads))]
	if s.ok && s.tid == h.TID && s.comm == h.Comm && h.Comm != "" {
		return s.id, nil // and w.comms holds it: comm clears a slot it outdates
	}
	id, err := w.commID(w.comm(h))
	if err == nil && h.Comm != "" {
		*s = commSlot{tid: h.TID, comm: h.Comm, id: id, ok: true}
	}
	return id, err
}

// namedCommID is the id of a thread's command name as an event names it (a
// waker, a block request's issuer), which is not its thread's last name.
func (w *Writer) namedCommID(tid uint32, comm string) (uint32, error) {
	s := &w.named[tid%uint32(len(w.named))]
	if s.ok && s.tid == tid && s.comm == comm {
		return s.id, nil
	}
	id, err := w.commID(comm)
	if err == nil {
		*s = commSlot{tid: tid, comm: comm, id: id, ok: true}
	}
	return id, err
}

// commID interns a command name in the comms dimension.
func (w *Writer) commID(comm string) (uint32, error) {
	if id, ok := w.commIDs[comm]; ok {
		return id, nil
	}
	id := uint32(len(w.commIDs))
	w.commIDs[comm] = id
	return id, w.t.comms.row().u32(id).str(comm).end()
}

func syscallNr(nr int32) int16 {
	if nr < -1 || nr > 32767 {
		return -1
	}
	return int16(nr)
}

// wakerNr is syscallNr for a waker's syscall, which can also be the timer.
func wakerNr(nr int32) int16 {
	if nr == event.WakerTimer {
		return int16(nr)
	}
	return syscallNr(nr)
}

func (w *Writer) comm(h *event.Header) string {
	if h.Comm != "" {
		if w.comms[h.TID] != h.Comm { // a map write per event only when the name changes
			w.comms[h.TID] = h.Comm
			if s := &w.threads[h.TID%uint32(len(w.threads))]; s.tid == h.TID {
				s.ok = false
			}
		}
		return h.Comm
	}
	return w.comms[h.TID]
}

// append writes an event's row (and the dimension rows it names first).
// Each row lists its table's columns in schema.go's order.
func (w *Writer) append(ev event.Event) error {
	t := &w.t
	switch e := ev.(type) {
	case *event.Syscall:
		return w.appendSyscall(e)
	case *event.SyscallTotals:
		c, name, bytes := event.SyscallClass(e.Nr), event.SyscallName(int32(e.Nr)), e.Bytes
		if !event.SyscallMovesBytes(name) {
			bytes = 0 // the kernel sums every positive return: accept's are fds, not bytes
		}
		return t.syscallTotals.row().u64(e.Time).u64(e.Last).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).str(name).str(c.String()).
			u32(e.File.Dev).u64(e.File.Ino).u32(e.File.Gen).u8(uint8(e.File.Kind)).u64(e.Count).u64(bytes).u64(e.TotalNS).
			u64(e.MaxNS).u64(e.Errors).u64s(e.Slots).end()
	case *event.File:
		return t.files.row().u64(e.Time).u32(e.Ref.Dev).u64(e.Ref.Ino).u32(e.Ref.Gen).u8(uint8(e.Ref.Kind)).str(e.Path).
			bool(e.Deleted).bool(e.Truncated).u64(e.Size).
			strOrNull(e.LocalName(), e.LocalName() != "").strOrNull(e.PeerName(), e.PeerName() != "").u64(e.PeerIno).end()
	case *event.CPUQuota:
		return t.cpuQuotas.row().u64(e.Time).u32(e.PID).u32(e.TID).str(e.Phase).str(e.Cgroup).str(e.Version).
			i64(e.QuotaUS).i64(e.PeriodUS).u64(e.Periods).u64(e.Throttled).u64(e.ThrottledNS).end()
	case *event.IOLimit:
		return t.ioLimits.row().u64(e.Time).u32(e.PID).u32(e.TID).str(e.Cgroup).str(e.Version).u32(e.Dev).
			u64(e.ReadBPS).u64(e.WriteBPS).u64(e.ReadIOPS).u64(e.WriteIOPS).end()
	case *event.MemoryLimit:
		return t.memoryLimits.row().u64(e.Time).u32(e.PID).u32(e.TID).str(e.Phase).str(e.Cgroup).str(e.Version).
			u64(e.LimitBytes).u64(e.HighBytes).u64(e.RefaultBytes).end()
	case *event.OffCPU:
		return w.appendOffCPU(e)
	case *event.Block:
		cid, err := w.namedCommID(e.TID, e.Comm)
		if err != nil {
			return err
		}
		return t.blockRaw.row().u64(e.Time).u64(e.InsertTime).u64(e.IssueTime).u32(e.PID).u32(e.TID).u32(cid).u32(e.Dev).
			u64(e.Sector).u32(e.Bytes).u8(uint8(e.Op)).bool(e.Sync).bool(e.Meta).bool(e.FUA).i32(e.Error).
			u32(e.File.Dev).u64(e.File.Ino).u32(e.File.Gen).end()
	case *event.Throttle:
		return t.throttle.row().u64(e.Time).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).u64(e.Pause).u64(e.Period).
			u64(e.Dirtied).u32(e.BDIDev).end()
	case *event.Writeback:
		return t.writeback.row().u64(e.Time).u32(e.PID).u32(e.TID).str(e.Comm).u32(e.File.Dev).u64(e.File.Ino).u32(e.File.Gen).
			u64(e.Pages).u64(e.Dur).end()
	case *event.Dirtied:
		return t.dirtied.row().u64(e.Time).u64(e.Last).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).u32(e.File.Dev).
			u64(e.File.Ino).u32(e.File.Gen).u64(e.Pages).end()
	case *event.CPUTime:
		return t.cputime.row().u64(e.Time).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).u64(e.OnCPU).end()
	case *event.Fork:
		return t.forks.row().u64(e.Time).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).u32(e.ChildPID).u32(e.ChildTID).end()
	case *event.Exec:
		return t.execs.row().u64(e.Time).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).u32(e.PPID).str(e.Filename).
			strs(e.Args).str(e.Cgroup).str(e.Service).end()
	case *event.Sample:
		return w.appendSample(e)
	case *event.ProcSample:
		return w.appendProcSample(e)
	case *event.Payload:
		return t.payloads.row().u64(e.Time).u32(e.PID).u32(e.TID).u32(e.Conn.Dev).u64(e.Conn.Ino).u32(e.Conn.Gen).blob(e.Data).u64(e.Arrived).end()
	case *event.Existing:
		return t.existing.row().u64(e.Time).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).u32(e.PPID).str(string(e.State)).
			strs(e.Args).str(e.Cgroup).str(e.Service).end()
	case *event.Exit:
		return w.appendExit(e)
	case *event.SockBytes:
		return t.tcpBytes.row().u64(e.Time).u32(e.Sock.Dev).u64(e.Sock.Ino).u32(e.Sock.Gen).u64(e.Received).u64(e.Sent).end()
	case *event.IOSnapshot:
		return t.taskIO.taskIO(&e.Header, w.comm(&e.Header), e.Phase, e.IO)
	case *event.Unlink:
		return t.unlinkRaw.row().u64(e.Time).u64(e.Dur).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).str(event.SyscallName(int32(e.Nr))).
			i64(e.Ret).u32(e.Dir.Dev).u64(e.Dir.Ino).u32(e.Dir.Gen).str(e.Name).end()
	case *event.Uring:
		return t.uring.row().u64(e.Time).u64(e.Dur).u32(e.PID).u32(e.TID).str(e.Comm).u32(e.Opcode).i64(e.Res).u64(e.UserData).
			i32(e.FD).u32(e.File.Dev).u64(e.File.Ino).u32(e.File.Gen).u8(uint8(e.File.Kind)).end()
	}
	return nil
}

// stackAndComm writes the rows of a stack and of a comm that an event's row
// names, and returns the comm's id: what the off-CPU waits and both kinds
// of sample need before their own row.
func (w *Writer) stackAndComm(stackID int32, frames []string, h *event.Header) (uint32, error) {
	if err := w.stack(stackID, frames); err != nil {
		return 0, err
	}
	return w.headerCommID(h)
}

// appendSyscall writes a syscall's row, after the row of the second file it
// moved bytes between (sendfile, splice, copy_file_range), when it had one:
// a table of its own, as only those three have it (schema.go).
func (w *Writer) appendSyscall(e *event.Syscall) error {
	t := &w.t
	cid, err := w.headerCommID(&e.Header)
	if err != nil {
		return err
	}
	if e.FD2 >= 0 || e.File2 != (event.FileRef{}) {
		err := t.secondFiles.row().u64(e.Time).u32(e.TID).i32(e.FD2).u32(e.File2.Dev).u64(e.File2.Ino).u32(e.File2.Gen).end()
		if err != nil {
			return err
		}
	}
	return t.syscalls.row().u64(e.Time).u64(e.Dur).u32(e.PID).u32(e.TID).u32(cid).u16(uint16(e.Nr)).
		i32(e.FD).i64(e.Ret).u64(e.Req).bool(e.Blocked).u32(e.File.Dev).u64(e.File.Ino).u32(e.File.Gen).u8(uint8(e.File.Kind)).
		u32(e.Flags).end()
}

// appendOffCPU writes an off-CPU wait's row after the rows it names: its
// kernel stack, its comm and its waker's.
func (w *Writer) appendOffCPU(e *event.OffCPU) error {
	t := &w.t
	cid, err := w.stackAndComm(e.StackID, e.Stack, &e.Header)
	if err != nil {
		return err
	}
	wid, err := w.namedCommID(e.WakerTID, e.WakerComm)
	if err != nil {
		return err
	}
	waits, first, longest := runOf(e)
	return t.offcpuRaw.row().u64(e.Time).u64(e.Time - e.Off).u64(e.Off).u64(e.Runq).u32(e.PID).u32(e.TID).u32(cid).u8(e.State).
		i32(e.StackID).i16(syscallNr(e.Syscall)).u32(e.WakerPID).u32(e.WakerTID).u32(wid).
		bool(e.Outside).u8(uint8(e.WakerSide)).u32(e.WakerFile.Dev).u64(e.WakerFile.Ino).u32(e.WakerFile.Gen).
		u8(uint8(e.FileKind)).u8(uint8(e.WakerFile.Kind)).i16(wakerNr(e.WakerSyscall)).
		u32(waits).u64(first).u64(longest).bool(e.Quota).end()
}

// appendSample writes an on-CPU sample's row after its stack's and comm's.
func (w *Writer) appendSample(e *event.Sample) error {
	t := &w.t
	cid, err := w.stackAndComm(e.StackID, e.Stack, &e.Header)
	if err != nil {
		return err
	}
	return t.samples.row().u64(e.Time).u32(e.PID).u32(e.TID).u32(cid).bool(e.User).i16(syscallNr(e.Syscall)).i32(e.FD).
		u32(e.File.Dev).u64(e.File.Ino).u32(e.File.Gen).u8(uint8(e.File.Kind)).str(e.Path).i32(e.StackID).end()
}

// appendProcSample writes a look in /proc at a thread (the sampled capture)
// after its stack's and comm's rows.
func (w *Writer) appendProcSample(e *event.ProcSample) error {
	t := &w.t
	cid, err := w.stackAndComm(e.StackID, e.Stack, &e.Header)
	if err != nil {
		return err
	}
	return t.procSamples.row().u64(e.Time).u32(e.PID).u32(e.TID).u32(cid).u8(e.State).i16(syscallNr(e.Syscall)).i32(e.FD).
		u8(uint8(e.FileKind)).str(e.Object).str(e.Wchan).i32(e.StackID).u64(e.RanNS).u64(e.RunDelayNS).u64(e.IntervalNS).bool(e.WasRunnable).
		bool(e.Throttled).bool(e.PollOnSockets).bool(e.OnPath).u64(e.TimeoutAt).bool(e.Reclaim).end()
}

// appendExit writes a task's last I/O counters, then its exit's row.
func (w *Writer) appendExit(e *event.Exit) error {
	t := &w.t
	if err := t.taskIO.taskIO(&e.Header, w.comm(&e.Header), "exit", e.IO); err != nil {
		return err
	}
	return t.exits.row().u64(e.Time).u32(e.PID).u32(e.TID).str(w.comm(&e.Header)).i32(e.Code).bool(e.GroupDead).end()
}

// stack writes a kernel stack the first time its id is met.
func (w *Writer) stack(id int32, frames []string) error {
	if id < 0 || w.stacks[id] || frames == nil {
		return nil
	}
	w.stacks[id] = true
	return w.t.stacks.row().i32(id).strs(frames).end()
}

// endRows writes what only the end knows: lost counts, devices, interfaces.
// Their names are read here, from /sys and the kernel's interface list, and
// so become text here (event.EncodeText).
func (w *Writer) endRows(lost map[string]uint64) []error {
	var errs []error
	for src, n := range lost {
		if err := w.t.lost.row().str(src).u64(n).end(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range sysinfo.Host.BlockDevices() {
		if err := w.t.devices.row().u32(d.Dev).str(event.EncodeText(d.Name)).str(event.EncodeText(d.Backing)).u32(d.BackingDev).u64(d.BackingIno).bool(d.Lower).
			u64(d.ThrottleReadBPS).u64(d.ThrottleWriteBPS).end(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ifa := range interfaceAddrs() {
		if err := w.t.interfaces.row().str(event.EncodeText(ifa[0])).str(ifa[1]).end(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// taskIO appends a task_io row.
func (l *tableLoad) taskIO(h *event.Header, comm, phase string, io event.TaskIO) error {
	return l.row().u64(h.Time).u32(h.PID).u32(h.TID).str(comm).str(phase).u64(io.RChar).u64(io.WChar).
		u64(io.SyscR).u64(io.SyscW).u64(io.ReadBytes).u64(io.WriteBytes).u64(io.CancelledWriteBytes).end()
}

// runOf is a wait's run: how many waits it sums, when the first began and
// the longest; a wait of its own (Waits 0 or 1) is a run of one.
func runOf(e *event.OffCPU) (waits uint32, first, longest uint64) {
	if e.Waits <= 1 {
		return 1, e.Time - e.Off, e.Off
	}
	return e.Waits, e.RunStart, e.MaxOff
}
