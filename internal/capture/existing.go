package capture

import (
	"fmt"
	"sync"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
	"golang.org/x/sys/unix"
)

// stackBeforeCapture is the stack id the kernel side gives an off-CPU
// interval whose switch-out it never saw (STACK_BEFORE_CAPTURE in whyslow.h).
const stackBeforeCapture = -2

// firstSyntheticStack numbers stacks read from /proc, above any id the
// kernel's stack map hands out.
const firstSyntheticStack = 1 << 30

// existing holds what /proc showed of threads that were already waiting when
// capture began (attach): the kernel never saw them switch out, so their
// state, syscall, stack and file at attach time stand in for it.
type existing struct {
	mu        sync.Mutex
	waiting   map[uint32]waitingThread
	nextStack int32
}

type waitingThread struct {
	sysinfo.Thread
	since uint64 // when capture began, CLOCK_MONOTONIC
	// ranNS is a runnable thread's time on a CPU so far (schedstat), to
	// tell at the end one that ran all along without a switch from one that
	// never got a CPU (stillWaiting).
	ranNS uint64
}

// AddExisting follows a running process: it joins the target set, and each
// of its threads already off CPU is noted, so that its wait, begun before
// capture, is counted from the moment capture began until the thread runs.
// The returned events describe the process and its threads as they were.
func (e *Engine) AddExisting(pid uint32) ([]event.Event, error) {
	if err := e.AddTarget(pid); err != nil {
		return nil, err
	}
	fs := sysinfo.Host
	threads, err := fs.Threads(int(pid))
	if err != nil {
		return nil, nil // exited meanwhile: nothing to follow
	}
	// Names from /proc become text as the kernel's records do (decode.go).
	args := fs.Cmdline(int(pid))
	cgroup := event.EncodeText(fs.Cgroup(pid))
	service := event.EncodeText(fs.ServiceName(pid))
	for i, a := range args {
		args[i] = event.EncodeText(a)
	}
	now := monotonicNow()
	e.existing.mu.Lock()
	defer e.existing.mu.Unlock()
	if e.existing.waiting == nil {
		e.existing.waiting = map[uint32]waitingThread{}
		e.existing.nextStack = firstSyntheticStack
	}
	var out []event.Event
	for _, th := range threads {
		th.Comm = event.EncodeText(th.Comm)
		if th.File != nil {
			th.File.Path = event.EncodeText(th.File.Path)
		}
		out = append(out, &event.Existing{Header: event.Header{Time: now, PID: th.PID, TID: th.TID, Comm: th.Comm},
			PPID: th.PPID, State: th.State, Args: args, Cgroup: cgroup, Service: service})
		// A runnable thread too: /proc cannot tell one on a CPU from one
		// waiting for a CPU (or held off by its cgroup's quota). The kernel
		// side tells by its first switch: a switch-in ends its wait for a
		// CPU, a switch-out says it ran (ran_since_attach, sched.bpf.h).
		w := waitingThread{Thread: th, since: now}
		if th.State == 'R' {
			w.ranNS, _ = fs.ThreadRunTime(int(pid), int(th.TID))
		}
		e.existing.waiting[th.TID] = w
		if err := e.maps.WaitingAtStart.Put(th.TID, now); err != nil {
			return out, fmt.Errorf("noting thread %d's wait: %w", th.TID, err)
		}
	}
	return out, nil
}

// completeBefore fills an interval begun before capture from what /proc
// showed, classifies it, and returns the syscall in progress and its file as
// events of their own.
func (e *Engine) completeBefore(o *event.OffCPU, st *stacks) []event.Event {
	e.existing.mu.Lock()
	w, ok := e.existing.waiting[o.TID]
	delete(e.existing.waiting, o.TID)
	id := e.existing.nextStack
	e.existing.nextStack++
	e.existing.mu.Unlock()
	if !ok {
		o.StackID = -1
		st.classify(o)
		return nil
	}
	o.State, o.Syscall, o.Stack, o.StackID = w.State, w.Syscall, w.Frames, id
	if o.State == 'R' && o.Runq == 0 {
		o.Runq = o.Off // runnable all along: no wakeup of it was seen
	}
	if o.PID == 0 {
		o.PID = w.PID
	}
	if o.Comm == "" {
		o.Comm = w.Comm
	}
	o.Reason = classify.Reason(classify.Input{State: o.State, Syscall: o.Syscall, Frames: o.Stack, PollOnSockets: st.sockets[o.PID],
		WakerKind: o.WakerFile.Kind, WakerSyscall: o.WakerSyscall})
	if w.Syscall < 0 {
		return nil
	}
	call := &event.Syscall{Header: event.Header{Time: o.Time - o.Off, PID: o.PID, TID: o.TID, Comm: o.Comm},
		Dur: o.Off, Nr: uint32(w.Syscall), FD: -1, FD2: -1, Blocked: true}
	out := []event.Event{call}
	if f := w.File; f != nil {
		call.FD = f.FD
		call.File = event.FileRef{Dev: f.Dev, Ino: f.Ino, Kind: kindOfMode(f.Mode)}
		if call.File.Known() {
			out = append(out, &event.File{Header: call.Header, Ref: call.File, Path: f.Path})
		}
	}
	return out
}

// stillWaiting closes, at the end of capture, the waits begun before it that
// never ended: threads that did not run at all while whyslow watched.
func (e *Engine) stillWaiting(now uint64) []event.Event {
	var out []event.Event
	var tid uint32
	var since uint64
	var slot whyslowWaitSlot
	it := e.maps.WaitingAtStart.Iterate()
	for it.Next(&tid, &since) {
		if now <= since || e.maps.OffcpuStart.Lookup(tid, &slot) == nil && slot.Cpu.Pid != 0 {
			continue // it ran: its waits were seen
		}
		if ran := e.ranAllAlong(tid, now-since); ran > 0 {
			e.existing.mu.Lock()
			w := e.existing.waiting[tid]
			delete(e.existing.waiting, tid)
			e.existing.mu.Unlock()
			out = append(out, &event.CPUTime{Header: event.Header{Time: now, PID: w.PID, TID: tid, Comm: w.Comm}, OnCPU: ran})
			continue
		}
		out = append(out, &event.OffCPU{Header: event.Header{Time: now, TID: tid},
			Off: now - since, StackID: stackBeforeCapture, Syscall: -1, WakerSyscall: -1, Waits: 1})
	}
	return out
}

// ranAllAlong is the CPU time of a thread attached to while runnable that
// the kernel never saw switch: on a CPU of its own all along (a busy loop
// on an idle machine), not waiting for one. 0 when it did not run for most
// of span.
func (e *Engine) ranAllAlong(tid uint32, span uint64) uint64 {
	e.existing.mu.Lock()
	w, ok := e.existing.waiting[tid]
	e.existing.mu.Unlock()
	if !ok || w.State != 'R' {
		return 0
	}
	now, err := sysinfo.Host.ThreadRunTime(int(w.PID), int(tid))
	if err != nil || now < w.ranNS || now-w.ranNS < span/2 {
		return 0
	}
	return now - w.ranNS
}

func kindOfMode(mode uint32) event.FileKind {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return event.KindRegular
	case unix.S_IFDIR:
		return event.KindDir
	case unix.S_IFCHR:
		return event.KindChar
	case unix.S_IFBLK:
		return event.KindBlock
	case unix.S_IFIFO:
		return event.KindPipe
	case unix.S_IFSOCK:
		return event.KindSocketOther
	}
	return event.KindUnknown
}

// Released notes the command run (pid, one thread), held at its gate until
// now, as waiting for a CPU from now: its time starts as the gate opens.
// Woken by the gate, or still starting up when it opened, it waits for a CPU
// until its first switch-in, which sends that wait; already on a CPU, its
// first switch-out counts its CPU time from now (ran_since_attach). Without
// the note, that first stretch was neither a wait nor CPU time (under load,
// tens of ms read as "not accounted"). Called right before the gate opens.
func (e *Engine) Released(pid uint32) error {
	now := monotonicNow()
	th := sysinfo.Thread{PID: pid, TID: pid, Comm: event.EncodeText(sysinfo.Host.Comm(pid)), State: 'R', Syscall: -1}
	w := waitingThread{Thread: th, since: now}
	w.ranNS, _ = sysinfo.Host.ThreadRunTime(int(pid), int(pid))
	e.existing.mu.Lock()
	defer e.existing.mu.Unlock()
	if e.existing.waiting == nil {
		e.existing.waiting = map[uint32]waitingThread{}
		e.existing.nextStack = firstSyntheticStack
	}
	e.existing.waiting[pid] = w
	if err := e.maps.WaitingAtStart.Put(pid, now); err != nil {
		return fmt.Errorf("noting the command's start: %w", err)
	}
	return nil
}
