package capture

import (
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
	"golang.org/x/sys/unix"
)

// runMark is RUN_MARK (bpf/sched.bpf.h): under checkRuns (tests), a run's
// record carries it in Waits.
const runMark = 0x80000000

// drain empties the default level's in-kernel aggregates into events. At the
// end it also closes off-CPU intervals still open, so a thread that slept
// through the whole capture is counted.
func (e *Engine) drain(final bool) []event.Event {
	var out []event.Event
	dec := newDecoder()

	readMap(e.maps.Agg, true, func(k *whyslowAggKey, av *whyslowAggVal) {
		out = append(out, &event.SyscallTotals{
			Header: event.Header{Time: av.FirstTs, PID: k.Pid, TID: k.Tid, Comm: dec.comm(av.Comm)},
			Last:   av.LastTs, Nr: k.Nr,
			File:  event.FileRef{Dev: k.Dev, Ino: k.Ino, Gen: k.Gen, Kind: event.FileKind(k.Kind)},
			Count: av.Count, Bytes: av.Bytes, TotalNS: av.TotalNs, MaxNS: av.MaxNs, Errors: av.Errors,
			Slots: append([]uint64(nil), av.Slots[:]...),
		})
	})
	readMap(e.maps.Dirty, true, func(k *whyslowDirtyKey, dv *whyslowDirtyVal) {
		if !e.targetDirtied.Load() && e.isTarget(k.Pid) {
			e.targetDirtied.Store(true)
		}
		out = append(out, &event.Dirtied{
			Header: event.Header{Time: dv.FirstTs, PID: k.Pid, TID: k.Tid, Comm: dec.comm(dv.Comm)},
			Last:   dv.LastTs, File: event.FileRef{Dev: k.Dev, Ino: k.Ino, Gen: k.Gen, Kind: event.KindRegular},
			Pages: dv.Pages,
		})
	})

	now := monotonicNow()
	// A target thread's on-CPU time is in its wait slot (cpu.pid 0: none).
	var gone []uint32
	complete := readMap(e.maps.OffcpuStart, false, func(tid *uint32, slot *whyslowWaitSlot) {
		cv := &slot.Cpu
		if cv.Pid == 0 {
			return
		}
		total := cv.OncpuNs
		if cv.OnSince != 0 && now > cv.OnSince {
			total = runningTotal(cv, *tid, now)
		}
		if d := e.cpuSeen.report(*tid, total); d > 0 {
			out = append(out, &event.CPUTime{Header: event.Header{Time: now, PID: cv.Pid, TID: *tid, Comm: dec.comm(cv.Comm)}, OnCPU: d})
		}
		if cv.Gone != 0 {
			gone = append(gone, *tid) // its last switch is past: this was its last time
		}
	})
	dead := e.cpuSeen.retire()
	e.cpuSeen.endRound(complete)
	for _, tid := range gone {
		e.cpuSeen.forget(tid)
	}
	if !final {
		// Its slot, once read after it died, holds nothing more. At the
		// end, the slots are read once more below.
		for _, tid := range append(dead, gone...) {
			e.retireSlot(tid)
		}
	}

	if final {
		out = append(out, e.stillWaiting(now)...)
		out = append(out, e.limits.end(now)...)
		readMap(e.maps.OffcpuStart, false, func(tid *uint32, slot *whyslowWaitSlot) {
			// A run of short waits not sent yet comes first: it ended
			// before the wait open now began.
			if slot.Run.Waits > 0 {
				if e.opts.checkRuns {
					slot.Run.Waits |= runMark // as the kernel marks the runs it sends
				}
				out = append(out, dec.offcpu(&slot.Run))
				if x := dec.extra; x != nil {
					dec.extra = nil
					out = append(out, x)
				}
			}
			os := &slot.W
			if os.Ts != 0 && now > os.Ts { // 0: a target thread between waits
				out = append(out, &event.OffCPU{Header: event.Header{Time: now, PID: os.Pid, TID: *tid},
					Off: now - os.Ts, State: byte(os.State), StackID: os.StackId, Syscall: os.Syscall, WakerSyscall: -1, Waits: 1,
					Quota: os.Quota != 0})
			}
		})
	}
	return out
}

// retireSlot takes a dead thread's slot out of the kernel's map, unless its
// thread id has a new life already: a thread made since (its first wait,
// for a CPU, opened at its wakeup) or one that ran (its switch-in cleared
// gone). Taking that out would lose the wait it has open, in silence: the
// kernel would see the new thread's switch-in as a new thread's.
func (e *Engine) retireSlot(tid uint32) {
	var slot whyslowWaitSlot
	if err := e.maps.OffcpuStart.Lookup(tid, &slot); err != nil {
		return // gone already
	}
	if slot.Cpu.Gone == 0 || slot.W.Ts != 0 {
		return
	}
	e.maps.OffcpuStart.Delete(tid)
}

// runningTotal is the CPU time of a thread on a CPU right now (its last
// switch-in seen, its switch-out not yet): the kernel's own account, read
// from /proc (one read per running thread, a few a second), less what the
// slot counted before it was followed; where /proc cannot tell, the time
// since its switch-in. A switch-out the kernel did not report leaves a
// thread looking as if it ran since: /proc is right about it too.
func runningTotal(cv *whyslowCpuVal, tid uint32, now uint64) uint64 {
	since := now - cv.OnSince
	if ran, err := sysinfo.Host.ThreadRunTime(int(cv.Pid), int(tid)); err == nil {
		// modulo 2^64, as the kernel side counts (whyslow.h, cpu_val)
		if total := ran - cv.ExecBase; total >= cv.OncpuNs && total-cv.OncpuNs <= since {
			return total
		}
	}
	return cv.OncpuNs + since
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

func (e *Engine) isTarget(pid uint32) bool {
	// The set holds peers too (peers.bpf.h): a target's value is 1.
	var kind uint8
	return e.opts.SystemWide || e.maps.Targets.Lookup(pid, &kind) == nil && kind == 1
}

// TargetDirtied reports whether the target dirtied page cache pages: only
// then is there writeback of its data to wait for after it exits.
func (e *Engine) TargetDirtied() bool {
	if e.targetDirtied.Load() {
		return true
	}
	var k whyslowDirtyKey
	var v whyslowDirtyVal
	it := e.maps.Dirty.Iterate()
	for it.Next(&k, &v) {
		if e.isTarget(k.Pid) {
			return true
		}
	}
	return false
}
