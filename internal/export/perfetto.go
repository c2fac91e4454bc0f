package export

import (
	"bufio"
	"database/sql"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
)

// A Perfetto trace (protos/perfetto/trace/perfetto_trace.proto) made of
// TrackEvent packets: a track per process and thread; on each thread's
// track, slices for its time on CPU, off CPU by reason and in the run queue,
// with instants where it woke another thread and flows from them to the
// woken; a child track "syscalls" with the streamed syscalls (file or peer
// in the args); counter tracks for each device's throughput and the pages
// dirtied and written back.

// Track UUIDs: a kind in the high bits, the id below.
const (
	uuidProcess = 1 << 40
	uuidThread  = 2 << 40
	uuidSyscall = 3 << 40
	uuidCounter = 4 << 40
)

const sequenceID = 1

// tev is one TrackEvent, kept until all are sorted by time.
type tev struct {
	ts    uint64
	order uint8 // at equal times: slice ends, then begins, then instants and counters
	seq   int   // and in the order they were made
	typ   uint64
	track uint64
	name  string
	cat   string
	args  []annotation
	flows []uint64
	ends  []uint64 // terminating flows
	value float64
}

type annotation struct {
	name string
	str  string
	num  int64
	isN  bool
}

func strArg(name, v string) annotation { return annotation{name: name, str: v} }
func numArg(name string, v int64) annotation {
	return annotation{name: name, num: v, isN: true}
}

type perfettoBuilder struct {
	src     *explain.Source
	events  []tev
	threads map[uint32]*ptrack // by tid
	procs   map[uint32]*pproc
	flow    uint64
	// counterList: the counter tracks, in the order they were made.
	counterList []counterTrack
}

type ptrack struct {
	pid, tid   uint32
	name       string
	syscalls   bool
	born, died uint64
}

type pproc struct {
	pid     uint32
	name    string
	cmdline []string
}

// Perfetto writes the recording as a Perfetto protobuf trace.
func Perfetto(w io.Writer, src *explain.Source) error {
	b := &perfettoBuilder{src: src, threads: map[uint32]*ptrack{}, procs: map[uint32]*pproc{}}
	for _, step := range []func() error{b.loadThreads, b.offCPU, b.syscalls, b.nameProcesses, b.counters} {
		if err := step(); err != nil {
			return err
		}
	}
	return b.write(w)
}

func (b *perfettoBuilder) add(e tev) {
	e.seq = len(b.events)
	b.events = append(b.events, e)
}

// slice adds a slice [a, z) on a track; empty ones are left out (a begin and
// end at one time would sort the wrong way round).
func (b *perfettoBuilder) slice(track, a, z uint64, name, cat string, args []annotation, ends []uint64) {
	if z <= a {
		return
	}
	b.add(tev{ts: a, order: 1, typ: typeSliceBegin, track: track, name: name, cat: cat, args: args, ends: ends})
	b.add(tev{ts: z, order: 0, typ: typeSliceEnd, track: track})
}

func (b *perfettoBuilder) thread(pid, tid uint32, name string) *ptrack {
	t := b.threads[tid]
	if t == nil {
		t = &ptrack{pid: pid, tid: tid, name: name}
		b.threads[tid] = t
	}
	if b.procs[pid] == nil {
		b.procs[pid] = &pproc{pid: pid}
	}
	return t
}

// loadThreads names the traced threads, with their births and deaths.
func (b *perfettoBuilder) loadThreads() error {
	rows, err := b.src.DB.Query(`SELECT t.pid, t.tid, t.comm, f.ts, e.ts FROM threads t
	    JOIN (SELECT DISTINCT tid FROM offcpu UNION SELECT DISTINCT tid FROM cputime
	          UNION SELECT DISTINCT tid FROM syscalls) traced USING (tid)
	    LEFT JOIN (SELECT child_tid AS tid, min(ts) AS ts FROM forks GROUP BY 1) f USING (tid)
	    LEFT JOIN (SELECT tid, max(ts) AS ts FROM exits GROUP BY 1) e USING (tid)`)
	if err != nil {
		return fmt.Errorf("reading threads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid, tid uint32
		var comm string
		var born, died sql.NullInt64
		if err := rows.Scan(&pid, &tid, &comm, &born, &died); err != nil {
			return err
		}
		t := b.thread(pid, tid, comm)
		t.born, t.died = uint64(born.Int64), uint64(died.Int64)
	}
	return rows.Err()
}

// nameProcesses names the processes of every track, with their command lines.
func (b *perfettoBuilder) nameProcesses() error {
	procs, err := b.src.DB.Query(`SELECT p.pid, p.comm, coalesce(x.args, e.args, []) FROM processes p
	    LEFT JOIN (SELECT pid, arg_max(args, ts) AS args FROM execs GROUP BY 1) x USING (pid)
	    LEFT JOIN (SELECT pid, arg_max(args, ts) AS args FROM existing GROUP BY 1) e USING (pid)`)
	if err != nil {
		return fmt.Errorf("reading processes: %w", err)
	}
	defer procs.Close()
	for procs.Next() {
		var pid uint32
		var comm sql.NullString
		var args []any
		if err := procs.Scan(&pid, &comm, &args); err != nil {
			return err
		}
		if p := b.procs[pid]; p != nil {
			p.name = comm.String
			for _, a := range args {
				p.cmdline = append(p.cmdline, fmt.Sprint(a))
			}
		}
	}
	return procs.Err()
}

// offCPU makes each thread's state slices: off CPU by reason, the run-queue
// tail of each wait, on CPU in between; and wake-ups as flows.
func (b *perfettoBuilder) offCPU() error {
	rows, err := b.src.DB.Query(`SELECT pid, tid, coalesce(comm, ''), start_ts, ts, runq_ns, coalesce(reason, 'other'), state,
	    coalesce(syscall, ''), waker_pid, waker_tid, coalesce(waker_comm, '') FROM offcpu ORDER BY tid, start_ts, ts`)
	if err != nil {
		return fmt.Errorf("reading off-CPU intervals: %w", err)
	}
	defer rows.Close()
	var cur *ptrack
	var last uint64 // end of the thread's previous interval
	for rows.Next() {
		var pid, tid, wpid, wtid uint32
		var comm, reason, state, syscall, wcomm string
		var a, z, runq uint64
		if err := rows.Scan(&pid, &tid, &comm, &a, &z, &runq, &reason, &state, &syscall, &wpid, &wtid, &wcomm); err != nil {
			return err
		}
		t := b.thread(pid, tid, comm)
		if t != cur {
			cur, last = t, max(t.born, b.src.Clock.StartMono)
		}
		a = max(a, last) // a wait begun before capture may overlap the next
		if z <= a {
			continue
		}
		track := uuidThread | uint64(tid)
		b.slice(track, last, a, "on-cpu", "cpu", nil, nil)
		woken := z - min(runq, z-a)
		var ends []uint64
		if wtid != 0 && wtid != tid && woken > a {
			b.flow++
			ends = []uint64{b.flow}
			w := b.thread(wpid, wtid, wcomm)
			b.add(tev{ts: woken, order: 2, typ: typeInstant, track: uuidThread | uint64(w.tid),
				name: "wakes " + comm + " (" + strconv.Itoa(int(tid)) + ")", cat: "wakeup", flows: []uint64{b.flow}})
		}
		if reason != "runqueue" {
			args := []annotation{strArg("state", state)}
			if syscall != "" {
				args = append(args, strArg("syscall", syscall))
			}
			if wtid != 0 {
				args = append(args, strArg("woken by", fmt.Sprintf("%s (%d)", wcomm, wtid)))
			}
			b.slice(track, a, woken, reason, "offcpu", args, nil)
			b.slice(track, woken, z, "runqueue", "offcpu", nil, ends)
		} else {
			b.slice(track, a, z, "runqueue", "offcpu", []annotation{strArg("state", state)}, ends)
		}
		last = z
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// On CPU after each thread's last wait, until it exited or capture ended.
	ends, err := b.lastWaits()
	if err != nil {
		return err
	}
	for tid, z := range ends {
		t := b.threads[tid]
		stop := b.src.Clock.EndMono
		if t.died != 0 {
			stop = t.died
		}
		b.slice(uuidThread|uint64(tid), z, stop, "on-cpu", "cpu", nil, nil)
	}
	return nil
}

func (b *perfettoBuilder) lastWaits() (map[uint32]uint64, error) {
	rows, err := b.src.DB.Query(`SELECT tid, max(ts) FROM offcpu GROUP BY tid`)
	if err != nil {
		return nil, fmt.Errorf("reading off-CPU intervals: %w", err)
	}
	defer rows.Close()
	out := map[uint32]uint64{}
	for rows.Next() {
		var tid uint32
		var z uint64
		if err := rows.Scan(&tid, &z); err != nil {
			return nil, err
		}
		out[tid] = z
	}
	return out, rows.Err()
}

// syscalls puts each streamed syscall on its thread's syscall track.
func (b *perfettoBuilder) syscalls() error {
	rows, err := b.src.DB.Query(`SELECT pid, tid, coalesce(comm, ''), ts, end_ts, coalesce(name, '?'), fd, ret, bytes,
	    coalesce(path, ''), coalesce(peer, '') FROM io WHERE exact ORDER BY tid, ts`)
	if err != nil {
		return fmt.Errorf("reading syscalls: %w", err)
	}
	defer rows.Close()
	var lastTID uint32
	var last uint64
	for rows.Next() {
		var pid, tid uint32
		var comm, name, path, peer string
		var a, z uint64
		var fd, ret sql.NullInt64
		var n int64
		if err := rows.Scan(&pid, &tid, &comm, &a, &z, &name, &fd, &ret, &n, &path, &peer); err != nil {
			return err
		}
		if tid != lastTID {
			lastTID, last = tid, 0
		}
		a = max(a, last) // slices on a track must not overlap
		if z <= a {
			continue
		}
		last = z
		b.thread(pid, tid, comm).syscalls = true
		var args []annotation
		if fd.Valid {
			args = append(args, numArg("fd", fd.Int64))
		}
		if ret.Valid {
			args = append(args, numArg("ret", ret.Int64))
		}
		if n > 0 {
			args = append(args, numArg("bytes", n))
		}
		if path != "" {
			args = append(args, strArg("file", path))
		}
		if peer != "" {
			args = append(args, strArg("peer", peer))
		}
		b.slice(uuidSyscall|uint64(tid), a, z, name, "syscall", args, nil)
	}
	return rows.Err()
}

// counterTrack is a counter track's descriptor.
type counterTrack struct {
	uuid       uint64
	name, unit string
}

// counters adds device throughput and page-cache rates, in 100 ms buckets
// (at most 20000 per track).
func (b *perfettoBuilder) counters() error {
	dur := b.src.Clock.EndMono - b.src.Clock.StartMono
	buckets := int(min(max(dur/100_000_000, 1), 20000))
	s, err := reports.TimeSeries(b.src.Source, buckets)
	if err != nil {
		return err
	}
	b.counterList = nil
	addSeries := func(name, unit string, xs []float64) {
		uuid := uuidCounter | uint64(len(b.counterList))
		b.counterList = append(b.counterList, counterTrack{uuid: uuid, name: name, unit: unit})
		for i, v := range xs {
			ts := s.StartMono + uint64(float64(i)*s.BucketS*1e9)
			b.add(tev{ts: ts, order: 2, typ: typeCounter, track: uuid, value: v})
		}
		b.add(tev{ts: s.StartMono + uint64(float64(len(xs))*s.BucketS*1e9), order: 2, typ: typeCounter, track: uuid, value: 0})
	}
	for _, d := range s.Devices {
		addSeries(d.Name+" read", "B/s", d.ReadBPS)
		addSeries(d.Name+" write", "B/s", d.WriteBPS)
	}
	addSeries("pages dirtied", "pages/s", s.DirtiedPagesPerS)
	addSeries("pages written back", "pages/s", s.WrittenBackPerS)
	return nil
}

// write writes the trace, a TracePacket at a time: the clock, the tracks,
// then the events.
func (b *perfettoBuilder) write(out io.Writer) error {
	w := &packetWriter{w: bufio.NewWriterSize(out, 1<<20), first: true}
	b.writeClock(w)
	b.writeTracks(w)
	b.writeEvents(w)
	return w.w.Flush()
}

// packetWriter writes TracePackets of one sequence; the first says the
// sequence's incremental state starts cleared.
type packetWriter struct {
	w     *bufio.Writer
	first bool
}

func (w *packetWriter) packet(p msg) {
	p = p.varint(packetSequenceID, sequenceID)
	if w.first {
		p = p.varint(packetSequenceFlags, seqIncrementalStateCleared)
		w.first = false
	}
	w.w.Write(msg(nil).bytes(tracePacket, p))
}

// writeClock writes the clock snapshot first, so that Perfetto can place
// what follows: timestamps are CLOCK_MONOTONIC; REALTIME maps them to wall
// time.
func (b *perfettoBuilder) writeClock(w *packetWriter) {
	start := b.src.Clock.StartMono
	snap := msg(nil).bytes(clockSnapshotClocks, msg(nil).varint(clockID, clockMonotonic).varint(clockTimestamp, start))
	snap = snap.bytes(clockSnapshotClocks, msg(nil).varint(clockID, clockRealtime).varint(clockTimestamp, uint64(int64(start)+b.src.Clock.OffsetNS)))
	snap = snap.varint(clockSnapshotPrimaryClock, clockMonotonic)
	w.packet(msg(nil).varint(packetTimestamp, start).varint(packetTimestampClock, clockMonotonic).bytes(packetClockSnapshot, snap))
}

// writeTracks describes every track before an event names it: processes,
// then threads (with their syscall tracks), then counters, each in a fixed
// order so that an export is the same bytes every time.
func (b *perfettoBuilder) writeTracks(w *packetWriter) {
	pids := make([]uint32, 0, len(b.procs))
	for pid := range b.procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		p := b.procs[pid]
		d := msg(nil).varint(processPID, uint64(pid)).str(processName, p.name)
		for _, a := range p.cmdline {
			d = d.str(processCmdline, a)
		}
		w.packet(msg(nil).bytes(packetTrackDescriptor, msg(nil).varint(trackUUID, uuidProcess|uint64(pid)).bytes(trackProcess, d)))
	}
	tids := make([]uint32, 0, len(b.threads))
	for tid := range b.threads {
		tids = append(tids, tid)
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	for _, tid := range tids {
		t := b.threads[tid]
		d := msg(nil).varint(threadPID, uint64(t.pid)).varint(threadTID, uint64(tid)).str(threadName, t.name)
		w.packet(msg(nil).bytes(packetTrackDescriptor, msg(nil).varint(trackUUID, uuidThread|uint64(tid)).bytes(trackThread, d)))
		if t.syscalls {
			w.packet(msg(nil).bytes(packetTrackDescriptor, msg(nil).varint(trackUUID, uuidSyscall|uint64(tid)).
				varint(trackParentUUID, uuidThread|uint64(tid)).str(trackName, "syscalls")))
		}
	}
	for _, c := range b.counterList {
		cd := msg(nil).varint(counterUnit, unitCount).str(counterUnitName, c.unit)
		if c.unit == "B/s" {
			cd = msg(nil).varint(counterUnit, unitSizeBytes).str(counterUnitName, c.unit)
		}
		w.packet(msg(nil).bytes(packetTrackDescriptor, msg(nil).varint(trackUUID, c.uuid).str(trackName, c.name).bytes(trackCounter, cd)))
	}
}

// writeEvents writes the events in time order (then in their order at one
// time, then as they were added), reusing one buffer for the events and
// one for their packets rather than allocating for each.
func (b *perfettoBuilder) writeEvents(w *packetWriter) {
	sort.Slice(b.events, func(i, j int) bool {
		x, y := &b.events[i], &b.events[j]
		if x.ts != y.ts {
			return x.ts < y.ts
		}
		if x.order != y.order {
			return x.order < y.order
		}
		return x.seq < y.seq
	})
	var ev, p msg
	for i := range b.events {
		e := &b.events[i]
		ev = ev[:0].varint(eventType, e.typ).varint(eventTrackUUID, e.track)
		if e.name != "" {
			ev = ev.str(eventName, e.name)
		}
		if e.cat != "" {
			ev = ev.str(eventCategories, e.cat)
		}
		for _, a := range e.args {
			an := msg(nil).str(annotationName, a.name)
			if a.isN {
				an = an.int(annotationIntValue, a.num)
			} else {
				an = an.str(annotationStringValue, a.str)
			}
			ev = ev.bytes(eventDebugAnnotations, an)
		}
		if e.typ == typeCounter {
			ev = ev.double(eventDoubleCounterValue, e.value)
		}
		for _, f := range e.flows {
			ev = ev.fixed64(eventFlowIDs, f)
		}
		for _, f := range e.ends {
			ev = ev.fixed64(eventTerminatingFlowIDs, f)
		}
		p = p[:0].varint(packetTimestamp, e.ts).varint(packetTimestampClock, clockMonotonic).bytes(packetTrackEvent, ev)
		w.packet(p)
	}
}
