package watch

import (
	"sync"

	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
)

// flight is the flight recorder's memory: the last window of events, as the
// engine handed them over, in a fixed budget of bytes. Events older than the
// window age out; when a burst would take more than the budget, the oldest
// go early and are counted (Dropped), never silently.
//
// Some events describe rather than happen: a file's path and kind, a
// process's command line. They are told once, when whyslow first meets the
// file or process, perhaps hours before an incident. The flight keeps the
// latest description of each (bounded too), so that an incident's recording
// names what its window only refers to.
type flight struct {
	mu      sync.Mutex
	window  uint64 // ns
	budget  int64  // bytes
	batches []stamped
	bytes   int64
	// dropped counts events that left before their window ended, to stay
	// in the budget; droppedUntil is the newest time they reached.
	dropped      uint64
	droppedUntil uint64
	// counters, when set, are told of drops (metrics).
	counters *Counters
	files    map[fileKey]*event.File
	procs    map[uint32]event.Event // *event.Exec or *event.Existing, per pid
	// undescribe, when set, is told of each file description forgotten,
	// so that the kernel describes the file again (capture.Engine.Undescribe).
	undescribe func(event.FileRef)
}

type stamped struct {
	events      []event.Event
	first, last uint64 // monotonic ns
	bytes       int64
}

type fileKey struct {
	ref event.FileRef
	pid uint32 // sockets are described per process that holds them
}

// Bounds on what is kept beyond the window: descriptions of files and
// processes met once, long ago. Past them, the oldest are forgotten (an
// incident then shows such a file by its inode only).
// maxFiles: as many as the kernel's table of described files holds, as
// live's names keep; a file forgotten is taken out of that table, to be
// described again when next met.
const (
	maxFiles = capture.LiveDescribedFiles
	maxProcs = 1 << 13
)

func newFlight(window uint64, budget int64) *flight {
	return &flight{window: window, budget: budget, files: map[fileKey]*event.File{}, procs: map[uint32]event.Event{}}
}

// add keeps a batch. now is the newest time the engine has reached.
func (f *flight) add(batch []event.Event, now uint64) {
	if len(batch) == 0 {
		return
	}
	// The engine's batches are made for 4096 events and sent when the rings
	// go quiet for 50 ms, most of them nearly empty: kept as they come, a
	// window of them was 64 KiB arrays holding a few events each (180 MiB
	// of heap in a minute of process churn). Kept trimmed to their length.
	if cap(batch) > len(batch)+len(batch)/4 {
		batch = append(make([]event.Event, 0, len(batch)), batch...)
	}
	s := stamped{events: batch, first: ^uint64(0), bytes: int64(cap(batch)) * 16}
	for _, ev := range batch {
		h := ev.Hdr()
		s.first = min(s.first, h.Time)
		s.last = max(s.last, h.Time)
		s.bytes += size(ev)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describe(batch)
	f.batches = append(f.batches, s)
	f.bytes += s.bytes
	f.trim(max(now, s.last))
}

// trim ages out batches wholly older than the window, then drops the
// oldest while over budget.
func (f *flight) trim(now uint64) {
	i := 0
	for i < len(f.batches) && now > f.window && f.batches[i].last < now-f.window {
		f.forget(f.batches[i])
		i++
	}
	for i < len(f.batches)-1 && f.bytes > f.budget {
		b := f.batches[i]
		f.dropped += uint64(len(b.events))
		if f.counters != nil {
			f.counters.Dropped.Add(uint64(len(b.events)))
		}
		f.droppedUntil = max(f.droppedUntil, b.last)
		f.forget(b)
		i++
	}
	if i > 0 {
		clear(f.batches[:i])
		f.batches = f.batches[i:]
		if cap(f.batches) > 4*len(f.batches)+64 { // give back the array a burst grew
			f.batches = append([]stamped(nil), f.batches...)
		}
	}
}

func (f *flight) forget(b stamped) {
	f.bytes -= b.bytes
	for _, ev := range b.events {
		// A process gone for a window is not named again: its description
		// goes with its exit.
		if x, ok := ev.(*event.Exit); ok && x.GroupDead {
			if p, ok := f.procs[x.PID]; ok && p.Hdr().Time <= x.Time {
				delete(f.procs, x.PID)
			}
		}
	}
}

// describe keeps the latest description of each file and process.
func (f *flight) describe(batch []event.Event) {
	for _, ev := range batch {
		switch v := ev.(type) {
		case *event.File:
			k := fileKey{ref: v.Ref}
			if v.Ref.Kind == event.KindSocketInet || v.Ref.Kind == event.KindSocketUnix {
				k.pid = v.PID
			}
			f.files[k] = v
		case *event.Exec:
			f.procs[v.PID] = v
		case *event.Existing:
			f.procs[v.PID] = v
		}
	}
	if len(f.files) > maxFiles {
		forgetOldest(f.files, maxFiles/2, func(_ fileKey, v *event.File) {
			if f.undescribe != nil {
				f.undescribe(v.Ref)
			}
		})
	}
	if len(f.procs) > maxProcs {
		forgetOldest(f.procs, maxProcs/2, nil)
	}
}

// forgetOldest deletes from m all but its keep newest entries, telling
// forgot (if not nil) of each.
func forgetOldest[K comparable, V event.Event](m map[K]V, keep int, forgot func(K, V)) {
	times := make([]uint64, 0, len(m))
	for _, v := range m {
		times = append(times, v.Hdr().Time)
	}
	cut := kthNewest(times, keep)
	for k, v := range m {
		if v.Hdr().Time < cut {
			delete(m, k)
			if forgot != nil {
				forgot(k, v)
			}
		}
	}
}

// kthNewest is the time of the keep-th newest entry (selection, not a sort).
func kthNewest(times []uint64, keep int) uint64 {
	if keep <= 0 || keep > len(times) {
		return 0
	}
	// Quickselect for the (len-keep)-th smallest.
	k := len(times) - keep
	lo, hi := 0, len(times)-1
	for lo < hi {
		p := times[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for times[i] < p {
				i++
			}
			for times[j] > p {
				j--
			}
			if i <= j {
				times[i], times[j] = times[j], times[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return times[k]
		}
	}
	return times[k]
}

// window is what an incident keeps: the events from start on (the flight's
// oldest, or later when the budget dropped some), and before them the
// descriptions of files and processes its events may refer to.
type window struct {
	start, end uint64
	events     []event.Event
	dropped    uint64 // events of the asked window dropped to stay in budget
}

// snapshot copies out the window [from, now].
func (f *flight) snapshot(from uint64) window {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := window{start: from}
	if f.droppedUntil >= from {
		w.start = f.droppedUntil + 1
		w.dropped = f.dropped // an upper bound: drops since watch began
	}
	n := 0
	for _, b := range f.batches {
		n += len(b.events)
	}
	w.events = make([]event.Event, 0, n+len(f.files)+len(f.procs))
	for _, p := range f.procs {
		if p.Hdr().Time < w.start {
			w.events = append(w.events, p)
		}
	}
	for _, d := range f.files {
		if d.Time < w.start {
			w.events = append(w.events, d)
		}
	}
	for _, b := range f.batches {
		if b.last < w.start {
			continue
		}
		for _, ev := range b.events {
			// A description from before the start is added above, from the
			// latest kept: added here too, the file would be there twice.
			t := ev.Hdr().Time
			if t >= w.start {
				w.events = append(w.events, ev)
			}
			w.end = max(w.end, t)
		}
	}
	return w
}

// size estimates what an event holds in memory: its struct, and the text
// and stacks it carries.
func size(ev event.Event) int64 {
	n := int64(96) // the interface, Header, a pointer's allocation rounding
	switch v := ev.(type) {
	case *event.OffCPU:
		n += 128 + int64(len(v.Stack))*16 + int64(len(v.WakerComm))
	case *event.Sample:
		n += 80 + int64(len(v.Stack))*16 + int64(len(v.Path))
	case *event.File:
		n += 160 + int64(len(v.Path)+len(v.UnixPath))
	case *event.Exec:
		n += 64 + int64(len(v.Filename)+len(v.Cgroup))
		for _, a := range v.Args {
			n += 16 + int64(len(a))
		}
	case *event.Existing:
		n += 48
		for _, a := range v.Args {
			n += 16 + int64(len(a))
		}
	case *event.Payload:
		n += 64 + int64(len(v.Data))
	case *event.SyscallTotals:
		n += 96 + int64(len(v.Slots))*8
	case *event.Unlink:
		n += 48 + int64(len(v.Name))
	default:
		n += 64
	}
	return n + int64(len(ev.Hdr().Comm))
}

// addWaiting ends the window with the waits in progress at now (the
// engine's list, read just before the snapshot): each as a wait that ends
// at now, unless the window holds it already finished.
func (w *window) addWaiting(now uint64, waiting []*event.OffCPU, self uint32) {
	if len(waiting) == 0 {
		return
	}
	type wait struct {
		tid   uint32
		start uint64
	}
	finished := map[wait]bool{}
	for _, ev := range w.events {
		if o, ok := ev.(*event.OffCPU); ok {
			finished[wait{o.TID, o.Time - o.Off}] = true
		}
	}
	for _, o := range waiting {
		if o.PID == self || finished[wait{o.TID, o.Time - o.Off}] {
			continue
		}
		w.events = append(w.events, o)
	}
	w.end = max(w.end, now)
}
