package capture

import (
	"github.com/cilium/ebpf"
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
		out = e.reportLifeBefore(out, dec, *tid, cv, now)
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
	due := e.cpuSeen.due()
	e.cpuSeen.endRound(complete)
	if !final {
		// A slot read after its thread died holds nothing more. At the
		// end, the slots are read once more below.
		for _, tid := range gone {
			out = e.takeOut(out, dec, tid, now, diedSlot)
		}
		for _, x := range due {
			out = e.takeOut(out, dec, x.tid, x.at, lifeEndedBefore(x.at))
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

// takeOut takes thread tid's slot out of the kernel's map if it still holds
// a life that ended (ended says so, of the slot as taken), and reports what
// that life ran since the last report; its end is at. A slot that a new life
// of the tid holds already (it was forked since, or ran: the kernel carries
// it on from the last life's count) is put back as it was. Taken and put
// back, not looked at and then deleted: between the two, the new life's
// switch could write the slot, and its write, its wait, would be lost.
func (e *Engine) takeOut(out []event.Event, dec *decoder, tid uint32, at uint64, ended func(*whyslowWaitSlot) bool) []event.Event {
	var slot whyslowWaitSlot
	if err := e.maps.OffcpuStart.LookupAndDelete(tid, &slot); err != nil {
		return out // gone already
	}
	if !ended(&slot) {
		if err := e.maps.OffcpuStart.Update(tid, &slot, ebpf.UpdateNoExist); err != nil {
			// The new life's next switch made a slot of its own in
			// between, counting from nothing: what it ran before is lost.
			e.cpuSeen.forget(tid)
			e.slotRaces.Add(1)
		}
		return out
	}
	cv := &slot.Cpu
	out = e.reportLifeBefore(out, dec, tid, cv, at)
	total := cv.OncpuNs
	if cv.OnSince != 0 && at > cv.OnSince { // its dying switch was not seen
		total += at - cv.OnSince
	}
	if d := e.cpuSeen.report(tid, total); d > 0 {
		out = append(out, &event.CPUTime{Header: event.Header{Time: at, PID: cv.Pid, TID: tid, Comm: dec.comm(cv.Comm)}, OnCPU: d})
	}
	e.cpuSeen.forget(tid)
	return out
}

// reportLifeBefore reports, as its own, what the life before the one slot cv
// holds ran and was not reported: a tid that came round again within a pass.
func (e *Engine) reportLifeBefore(out []event.Event, dec *decoder, tid uint32, cv *whyslowCpuVal, at uint64) []event.Event {
	if d := e.cpuSeen.lifeBefore(tid, cv.Life, cv.LifeBase); d > 0 && cv.BeforePid != 0 {
		out = append(out, &event.CPUTime{Header: event.Header{Time: at, PID: cv.BeforePid, TID: tid, Comm: dec.comm(cv.BeforeComm)}, OnCPU: d})
	}
	return out
}

// diedSlot: the slot's thread died (its dying switch was seen), and no
// new life has taken its tid since.
func diedSlot(s *whyslowWaitSlot) bool { return s.Cpu.Gone != 0 && s.W.Ts == 0 && s.Run.Waits == 0 }

// lifeEndedBefore: the slot counts a life that began before at (the exit of the
// thread whose tid it is; its dying switch was not seen) and holds no wait
// open or short waits unsent; a life begun since is a new thread's. A slot
// that never counted a target's time is not the dead thread's.
func lifeEndedBefore(at uint64) func(*whyslowWaitSlot) bool {
	return func(s *whyslowWaitSlot) bool {
		return s.W.Ts == 0 && s.Run.Waits == 0 && s.Cpu.Pid != 0 && s.Cpu.Life < at
	}
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
