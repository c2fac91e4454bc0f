package capture

import (
	"github.com/whyslow/whyslow/internal/event"
	"golang.org/x/sys/unix"
)

// drain empties the default level's in-kernel aggregates into events. At the
// end it also closes off-CPU intervals still open, so a thread that slept
// through the whole capture is counted.
func (e *Engine) drain(final bool) []event.Event {
	var out []event.Event
	dec := newDecoder()

	agg := e.coll.Maps["agg"]
	var ak whyslowAggKey
	var keys []whyslowAggKey
	it := agg.Iterate()
	var av whyslowAggVal
	for it.Next(&ak, &av) {
		keys = append(keys, ak)
	}
	for _, k := range keys {
		if err := agg.LookupAndDelete(&k, &av); err != nil {
			continue
		}
		out = append(out, &event.SyscallTotals{
			Header: event.Header{Time: av.FirstTs, PID: k.Pid, TID: k.Tid, Comm: dec.comm(av.Comm)},
			Last:   av.LastTs, Nr: k.Nr,
			File:  event.FileRef{Dev: k.Dev, Ino: k.Ino, Gen: k.Gen, Kind: event.FileKind(k.Kind)},
			Count: av.Count, Bytes: av.Bytes, TotalNS: av.TotalNs, MaxNS: av.MaxNs, Errors: av.Errors,
			Slots: append([]uint64(nil), av.Slots[:]...),
		})
	}

	dirty := e.coll.Maps["dirty"]
	var dk whyslowDirtyKey
	var dv whyslowDirtyVal
	var dkeys []whyslowDirtyKey
	dit := dirty.Iterate()
	for dit.Next(&dk, &dv) {
		dkeys = append(dkeys, dk)
	}
	for _, k := range dkeys {
		if err := dirty.LookupAndDelete(&k, &dv); err != nil {
			continue
		}
		out = append(out, &event.Dirtied{
			Header: event.Header{Time: dv.FirstTs, PID: k.Pid, TID: k.Tid, Comm: dec.comm(dv.Comm)},
			Last:   dv.LastTs, File: event.FileRef{Dev: k.Dev, Ino: k.Ino, Gen: k.Gen, Kind: event.KindRegular},
			Pages: dv.Pages,
		})
	}

	now := monotonicNow()
	cpu := e.coll.Maps["cpu"]
	var tid uint32
	var cv whyslowCpuVal
	cit := cpu.Iterate()
	if e.cpuSeen == nil {
		e.cpuSeen = make(map[uint32]uint64)
	}
	for cit.Next(&tid, &cv) {
		total := cv.OncpuNs
		if cv.OnSince != 0 && now > cv.OnSince {
			total += now - cv.OnSince // running right now
		}
		if d := total - e.cpuSeen[tid]; total > e.cpuSeen[tid] && d > 0 {
			out = append(out, &event.CPUTime{Header: event.Header{Time: now, PID: cv.Pid, TID: tid, Comm: dec.comm(cv.Comm)}, OnCPU: d})
			e.cpuSeen[tid] = total
		}
	}

	if final {
		var os whyslowOffstart
		oit := e.coll.Maps["offcpu_start"].Iterate()
		for oit.Next(&tid, &os) {
			if now <= os.Ts {
				continue
			}
			out = append(out, &event.OffCPU{Header: event.Header{Time: now, PID: os.Pid, TID: tid},
				Off: now - os.Ts, State: byte(os.State), StackID: os.StackId, Syscall: os.Syscall})
		}
	}
	return out
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}
