// Package live turns the capture engine's events into per-interval totals in
// memory, system-wide: where each process's wall time went (CPU, and waits by
// reason with the file, socket or device waited on), devices, hot files,
// dirty pages and writeback by the process that dirtied them. `whyslow top`
// draws its frames; `whyslow exporter` adds them into Prometheus counters.
//
// Reasons come from the off-CPU intervals and their classification, the
// block, dirty, throttle and writeback events; syscall events, where the
// capture level streams them, only name the file of a wait.
package live

import (
	"sync"

	"github.com/whyslow/whyslow/internal/event"
)

// Aggregator accumulates events into the current frame. Feed may be called
// from one goroutine while Cut is called from another.
type Aggregator struct {
	mu  sync.Mutex
	cur *Frame
	// closing is the frame Seal ended, still open to the events of its
	// interval that are on their way (the rings are read in batches) until
	// Finish hands it over.
	closing *Frame
	names   *names
	waits   waits
}

// NewAggregator starts the first frame at start (CLOCK_MONOTONIC ns).
func NewAggregator(start uint64) *Aggregator {
	return &Aggregator{cur: newFrame(start), names: newNames(), waits: newWaits()}
}

func newFrame(start uint64) *Frame {
	return &Frame{Start: start, Procs: map[uint32]*Proc{}, Devices: map[uint32]*Device{},
		Files: map[event.FileRef]*FileStat{}, Names: map[Object]string{}, Events: map[string]uint64{}}
}

// Feed adds a batch of events; it is a capture.Sink.
func (a *Aggregator) Feed(batch []event.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ev := range batch {
		a.add(ev)
	}
}

func (a *Aggregator) add(ev event.Event) {
	if c := a.closing; c != nil {
		// An event of the sealed interval that came after the cut counts
		// there: in the next frame a thread would pass 100%, and this one
		// fall short as much.
		if t := ev.Hdr().Time; t != 0 && t <= c.End {
			cur := a.cur
			a.cur = c
			defer func() { a.cur = cur }()
		}
	}
	f := a.cur
	switch v := ev.(type) {
	case *event.OffCPU:
		f.Events["offcpu"]++
		a.names.noteThread(v.PID, v.TID, v.Comm)
		a.finishedWait(v)
	case *event.CPUTime:
		f.Events["cpu"]++
		a.names.noteThread(v.PID, v.TID, v.Comm)
		p, t := a.thread(v.PID, v.TID)
		p.CPU += v.OnCPU
		t.CPU += v.OnCPU
	case *event.Syscall:
		f.Events["syscall"]++
		a.blockedSyscall(v)
		a.fileIO(v.Nr, v.File, uint64(max(v.Ret, 0)))
	case *event.SyscallTotals:
		f.Events["syscall_totals"]++
		a.fileIO(v.Nr, v.File, v.Bytes)
	case *event.File:
		f.Events["file"]++
		a.names.noteFile(v)
	case *event.Block:
		f.Events["block"]++
		a.block(v)
	case *event.Dirtied:
		f.Events["dirtied"]++
		bytes := v.Pages * pageSize
		a.names.noteDirtier(v.File, v.PID)
		p, _ := a.thread(v.PID, v.TID)
		p.Dirtied += bytes
		a.noteDirtied(v.PID, v.File, bytes)
		a.file(v.File).Dirtied += bytes
	case *event.Throttle:
		f.Events["throttle"]++
		p, _ := a.thread(v.PID, v.TID)
		p.Throttled += v.Pause
	case *event.Writeback:
		f.Events["writeback"]++
		if pid, ok := a.names.dirtierOf(v.File); ok {
			p := a.proc(pid)
			p.WrittenBack += v.Pages * pageSize
		}
	case *event.Exec:
		f.Events["exec"]++
		a.names.noteExec(v)
	case *event.Fork:
		f.Events["fork"]++
		a.names.noteFork(v)
	case *event.Exit:
		f.Events["exit"]++
		a.names.noteExit(v)
	default:
		f.Events["other"]++
	}
}

const pageSize = event.PageSize

// fileIO counts bytes read or written by syscalls on a file, filetop-like.
func (a *Aggregator) fileIO(nr uint32, ref event.FileRef, bytes uint64) {
	if !ref.Known() || bytes == 0 {
		return
	}
	switch event.SyscallClass(nr) {
	case event.ClassRead:
		a.file(ref).Read += bytes
	case event.ClassWrite:
		a.file(ref).Written += bytes
	}
}

func (a *Aggregator) block(b *event.Block) {
	d := a.cur.Devices[b.Dev]
	if d == nil {
		d = &Device{Dev: b.Dev}
		a.cur.Devices[b.Dev] = d
	}
	from := b.InsertTime
	if from == 0 {
		from = b.IssueTime
	}
	var await uint64
	if from != 0 && b.Time > from {
		await = b.Time - from
	}
	bytes := uint64(b.Bytes)
	var p *Proc
	if b.PID != 0 {
		p, _ = a.thread(b.PID, b.TID)
		a.noteIssued(b.PID, b.Dev, bytes)
	}
	switch b.Op {
	case 0:
		d.Reads++
		d.ReadBytes += bytes
		d.ReadAwaitNS += await
		d.ReadLatencies = append(d.ReadLatencies, await)
		if p != nil {
			p.DiskRead += bytes
		}
		if b.File.Known() {
			a.file(b.File).DiskRead += bytes
		}
	case 1:
		d.Writes++
		d.WriteBytes += bytes
		d.WriteAwaitNS += await
		d.WriteLatencies = append(d.WriteLatencies, await)
		if p != nil {
			p.DiskWritten += bytes
		}
		if b.File.Known() {
			a.file(b.File).DiskWritten += bytes
		}
	}
}

func (a *Aggregator) proc(pid uint32) *Proc {
	p := a.cur.Procs[pid]
	if p == nil {
		p = &Proc{PID: pid, Times: newTimes(), Threads: map[uint32]*Thread{}}
		a.cur.Procs[pid] = p
	}
	return p
}

func (a *Aggregator) thread(pid, tid uint32) (*Proc, *Thread) {
	p := a.proc(pid)
	t := p.Threads[tid]
	if t == nil {
		t = &Thread{TID: tid, Times: newTimes()}
		p.Threads[tid] = t
	}
	return p, t
}

func (a *Aggregator) file(ref event.FileRef) *FileStat {
	fs := a.cur.Files[ref]
	if fs == nil {
		fs = &FileStat{Ref: ref}
		a.cur.Files[ref] = fs
	}
	return fs
}

func newTimes() Times {
	return Times{Wait: map[event.Reason]uint64{}, On: map[Object]uint64{}}
}

// Cut ends the current frame at now and starts the next: Seal then Finish,
// for callers with no events on their way (tests).
func (a *Aggregator) Cut(now uint64, waiting []*event.OffCPU) *Frame {
	a.Seal(now, waiting)
	return a.Finish()
}

// Seal ends the current frame at now and starts the next. waiting is the
// waits in progress at now (capture.Waits.Now): the part of each that fell
// in this frame is counted here, the rest when it goes on or ends. The
// sealed frame still takes the events of its interval fed before Finish.
func (a *Aggregator) Seal(now uint64, waiting []*event.OffCPU) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.cur
	listed := make(map[uint32]bool, len(waiting))
	for _, w := range waiting {
		a.names.noteThread(w.PID, w.TID, "")
		a.inProgressWait(w)
		listed[w.TID] = true
	}
	a.endWaits(now, listed)
	f.End = now
	a.cur = newFrame(now)
	a.closing = f
}

// Finish hands over the frame Seal ended, named, each thread's time bounded
// by the interval. Nil when none was sealed.
func (a *Aggregator) Finish() *Frame {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.closing
	if f == nil {
		return nil
	}
	a.closing = nil
	a.names.label(f)
	bound(f)
	return f
}
