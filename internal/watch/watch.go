// Package watch is whyslow's flight recorder: a system-wide capture at the
// default level whose last window of events stays in memory, in a fixed
// budget, and triggers that, when something is slow (a request, a stalled
// thread, pressure, or a user's word), write that window as a recording and
// explain it: an incident. LTTng's snapshot mode and Perfetto's triggers keep
// a trace; watch also says what it holds.
package watch

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/procfs"
	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/live"
	"github.com/whyslow/whyslow/internal/sysinfo"
	"golang.org/x/sys/unix"
)

// Options say what to watch for and where incidents go.
type Options struct {
	Capture capture.Options
	Dir     string // incidents: DIR/<time>-<trigger>.{db,txt,json,html}
	// Window is how much is kept before a trigger; After how long after it
	// the incident is written, so the slow thing's end is in it; Cooldown
	// how long after an incident other triggers are only counted.
	Window, After, Cooldown time.Duration
	Keep                    int   // incidents kept; the oldest go (0: no limit)
	MaxDisk                 int64 // bytes of incidents kept; the oldest go (0: no limit)
	Memory                  int64 // budget of the events kept in memory
	SlowRequest             time.Duration
	Stall                   time.Duration
	PSI                     []PSIRule
	Snapshot                <-chan struct{} // a trigger by hand (SIGUSR1, watch --snapshot)
	Log                     io.Writer       // one line per incident (stderr)
	Exe                     string          // the whyslow that explains incidents
	// Frame is given each second's frame (the exporter's metrics); Ready is
	// called once capture is attached; Incident after each incident.
	Frame    func(*live.Frame)
	Ready    func(live.Info)
	Incident func(Incident)
	// Counters, if set, are kept up to date for metrics.
	Counters *Counters
	// OTLP is the OTLP endpoint each incident is sent to once explained
	// (otlp.go): an OTLP/HTTP traces URL, or with OTLPProtocol "grpc" a
	// gRPC target; "" sends none.
	OTLP         string
	OTLPProtocol string // export otlp's --protocol: "" (http/protobuf) or "grpc"
}

// Counters are what a watch has done so far.
type Counters struct {
	Dropped  atomic.Uint64 // events the memory budget dropped before their window ended
	Triggers atomic.Uint64 // triggers fired, written as incidents or not
	// Incidents sent to the OTLP endpoint, and those dropped: the queue was
	// full, or the endpoint did not take them.
	OTLPSent, OTLPDropped atomic.Uint64
}

// Run watches until ctx ends.
func Run(ctx context.Context, o Options) error {
	w := newWatcher(o)
	if o.OTLP != "" {
		w.otlp = newOTLPSender(&w.o, &w.own)
		go w.otlp.run(ctx)
		defer w.otlp.close()
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.incidents(ctx) }()
	sampler := live.Sampler{Every: time.Second, Capture: o.Capture, Tee: w.batch, Waiting: w.waiting,
		Opened: func(r *capture.Waits) { w.waits.Store(r) },
		Undescribe: func(undescribe func(event.FileRef)) {
			w.flight.mu.Lock()
			w.flight.undescribe = undescribe
			w.flight.mu.Unlock()
		}}
	err := sampler.Run(ctx, func(info live.Info) {
		w.info = info
		w.started.Store(monotonicNow())
		if o.Ready != nil {
			o.Ready(info)
		}
	}, func(f *live.Frame) {
		w.frame(f)
		if o.Frame != nil {
			o.Frame(f)
		}
	})
	close(w.fired)
	wg.Wait()
	return err
}

// watcher is the state between the capture, the triggers and the incidents.
type watcher struct {
	o      Options
	flight *flight
	info   live.Info
	self   uint32
	own    ownChildren // the processes it starts (own.go)

	mu       sync.Mutex // the triggers' state: the capture's goroutine and the cuts' share it
	stalls   *stalls
	serving  *inOrder
	pressure *pressure
	newest   uint64 // the newest event time seen
	lost     lostHistory

	fired chan *Trigger
	otlp  *otlpSender                   // nil without --otlp
	waits atomic.Pointer[capture.Waits] // the waits in progress, read when an incident is written
	// started is when capture began (CLOCK_MONOTONIC ns): an incident's
	// window never reaches before it, where nothing was seen.
	started atomic.Uint64
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

func newWatcher(o Options) *watcher {
	span := o.Window + o.After + maxLinger + time.Second
	w := &watcher{o: o, flight: newFlight(uint64(span), o.Memory), self: uint32(os.Getpid()),
		stalls: newStalls(o.Stall), fired: make(chan *Trigger, 64)}
	w.flight.counters = o.Counters
	if o.SlowRequest > 0 {
		w.serving = newInOrder(uint64(o.SlowRequest))
	}
	if len(o.PSI) > 0 {
		fs, err := procfs.NewFS("/proc")
		if err == nil {
			w.pressure = newPressure(fs, o.PSI)
		}
	}
	return w
}

// ours says whether pid is whyslow's: watch, or a process it started.
func (w *watcher) ours(pid uint32) bool { return pid == w.self || w.own.has(pid) }

// batch keeps a batch of events and looks for triggers in it.
func (w *watcher) batch(b []event.Event) {
	w.mu.Lock()
	for _, ev := range b {
		h := ev.Hdr()
		w.newest = max(w.newest, h.Time)
		if w.ours(h.PID) {
			continue
		}
		var t *Trigger
		switch v := ev.(type) {
		case *event.OffCPU:
			if w.o.Stall > 0 {
				t = w.stalls.finished(v)
			}
		case *event.Syscall, *event.Payload:
			if w.serving != nil {
				w.serving.add(v)
			}
		}
		if t != nil {
			w.fire(t)
		}
	}
	if w.serving != nil {
		for _, t := range w.serving.release(w.newest) {
			w.fire(t)
		}
	}
	newest := w.newest
	w.mu.Unlock()
	w.flight.add(b, newest)
}

// waiting looks at the waits in progress, at each cut.
func (w *watcher) waiting(now uint64, waiting []*event.OffCPU) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.newest = max(w.newest, now)
	for _, o := range waiting {
		if w.ours(o.PID) || w.o.Stall == 0 {
			continue
		}
		if t := w.stalls.inProgress(o); t != nil {
			w.fire(t)
		}
	}
	if w.serving != nil {
		for _, t := range w.serving.slow(now) {
			w.fire(t)
		}
	}
}

// frame runs what goes once a second: pressure, hand triggers, the lost
// counts' history, and forgetting.
func (w *watcher) frame(f *live.Frame) {
	if r := w.waits.Load(); r != nil {
		// A limited cgroup's counts read again each second: an incident's
		// window then holds a reading from its start, and write ends it with another.
		w.flight.add(r.Limits(event.QuotaFirst), f.End)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost.add(f.End, f.Lost)
	if w.pressure != nil {
		for _, t := range w.pressure.poll(time.Now(), f.End) {
			w.fire(t)
		}
	}
	select {
	case <-w.o.Snapshot:
		w.fire(&Trigger{Kind: KindSnapshot, At: f.End, Detail: "asked for"})
	default:
	}
	if keep := uint64(w.o.Window + w.o.After); f.End > keep {
		w.stalls.forget(f.End - keep)
		if w.serving != nil {
			w.serving.forget(f.End - 10*keep)
		}
	}
}

// fire hands a trigger to the incident writer; one that finds it busy is
// counted with the incident in progress.
func (w *watcher) fire(t *Trigger) {
	if t.PID != 0 && t.Cgroup == "" {
		t.Cgroup = sysinfo.Host.Cgroup(t.PID)
	}
	if w.o.Counters != nil {
		w.o.Counters.Triggers.Add(1)
	}
	select {
	case w.fired <- t:
	default:
	}
}

// lostHistory keeps the engine's cumulative lost counts once a second, so an
// incident gives the losses of its own window.
type lostHistory struct {
	at    []uint64
	total []map[string]uint64
}

const lostKept = 3600

func (l *lostHistory) add(at uint64, lost map[string]uint64) {
	l.at = append(l.at, at)
	l.total = append(l.total, lost)
	if len(l.at) > lostKept {
		l.at = append([]uint64(nil), l.at[len(l.at)-lostKept/2:]...)
		l.total = append([]map[string]uint64(nil), l.total[len(l.total)-lostKept/2:]...)
	}
}

// since is what was lost from the last count at or before from to the latest.
func (l *lostHistory) since(from uint64) map[string]uint64 {
	out := map[string]uint64{}
	if len(l.at) == 0 {
		return out
	}
	base := map[string]uint64{}
	for i, at := range l.at {
		if at <= from {
			base = l.total[i]
		}
	}
	for k, n := range l.total[len(l.total)-1] {
		if d := n - base[k]; n > base[k] && d > 0 {
			out[k] = d
		}
	}
	return out
}

func describeTrigger(t *Trigger) string {
	if t.PID == 0 {
		return fmt.Sprintf("%s: %s", t.Kind, t.Detail)
	}
	s := fmt.Sprintf("%s: %s (pid %d, tid %d", t.Kind, t.Comm, t.PID, t.TID)
	if t.Cgroup != "" && t.Cgroup != "/" {
		s += ", " + event.CgroupName(t.Cgroup)
	}
	return s + "): " + t.Detail
}
