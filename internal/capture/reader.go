package capture

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// Sink receives batches of events. It is called from one goroutine at a time.
type Sink func(batch []event.Event)

const (
	batchSize   = 4096
	batchWait   = 50 * time.Millisecond
	drainPeriod = time.Second
)

// Run reads both ring buffers and drains the in-kernel aggregates every second,
// handing events to sink until ctx is done; then it detaches the programs,
// reads what is left and returns. Off-CPU intervals still open at the end are
// closed at that moment.
func (e *Engine) Run(ctx context.Context, sink Sink) error {
	// The rings are read to their end only once the programs are detached:
	// a record written after the last read was lost (a thread's wait that
	// ended as its process exited, a run of short waits sent at its death),
	// and a thread whose last wait is missing looks busy all along.
	parent := ctx
	ctx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	go func() {
		select {
		case <-parent.Done():
			e.detach()
			stopReading()
		case <-ctx.Done():
		}
	}()
	out := make(chan []event.Event, 256) // about a million events of slack for bursts
	st := newStacks(e.maps.Stacks, &e.ownStacks)
	var wg sync.WaitGroup
	events, meta := e.events, e.meta
	// fill and load (or a nil in their place), and a reader per other
	// ring: each sends its error once.
	errc := make(chan error, 3+len(e.calls))
	sent := 2
	rings := []*ring{events, meta}
	var spooled chan []event.Event
	if e.opts.SpoolDir != "" {
		// The busy rings go through a spool file; their backlog is on
		// disk, not in a channel. The loader's batches have a channel of
		// their own, a short one: the others' (meta's, the drains') must
		// not queue behind a loader that holds (pace.go), nor the spooled
		// ones be decoded far ahead of the store.
		spooled = make(chan []event.Event, 4)
		sp, err := newSpool(e.opts.SpoolDir)
		if err != nil {
			return err
		}
		e.spooling.Store(sp)
		defer e.spooling.Store(nil)
		rings = rings[1:]
		wg.Add(2)
		go func() {
			defer wg.Done()
			errc <- e.fill(ctx, append([]*ring{events}, e.calls...), sp)
		}()
		go func() {
			defer wg.Done()
			errc <- e.load(sp, spooled, newPacer())
			close(spooled)
		}()
	} else {
		rings = append(rings, e.calls...)
		errc <- nil
		sent = 1
	}
	sent += len(rings)
	for _, r := range rings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- e.read(ctx, r, out)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(drainPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if b := e.drain(false); len(b) > 0 {
					out <- b
				}
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		if b := e.drain(true); len(b) > 0 {
			out <- b
		}
		close(out)
		close(done)
	}()
	e.consume(out, spooled, st, sink)
	<-done
	var errs []error
	for range sent {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// consume completes each decoded batch (stacks named, waits classified,
// what began before capture completed) and hands it to sink, until out and
// spooled (nil when there is no spool) are closed. One goroutine: the
// stacks it names are its own.
func (e *Engine) consume(out, spooled <-chan []event.Event, st *stacks, sink Sink) {
	for out != nil || spooled != nil {
		var b []event.Event
		var ok bool
		select {
		case b, ok = <-out:
			if !ok {
				out = nil
				continue
			}
		case b, ok = <-spooled:
			if !ok {
				spooled = nil
				continue
			}
		}
		var extra []event.Event
		owns := 0
		for _, ev := range b {
			switch v := ev.(type) {
			case *ownStack:
				st.own(v)
				owns++
			case *event.OffCPU:
				if v.StackID == stackBeforeCapture {
					extra = append(extra, e.completeBefore(v, st)...)
				} else {
					st.classify(v)
				}
			case *event.Sample:
				st.sampled(v)
			case *event.Syscall:
				st.noteFile(v.PID, v.File)
			case *event.SyscallTotals:
				st.noteFile(v.PID, v.File)
			case *event.Fork:
				e.cpuSeen.fork(v.ChildTID)
			case *event.Exit:
				e.cpuSeen.exit(v.TID, v.Time)
				if v.GroupDead {
					st.exited(v.PID)
				}
			}
		}
		if owns > 0 {
			b = slices.DeleteFunc(b, func(ev event.Event) bool { _, own := ev.(*ownStack); return own })
		}
		sink(append(b, extra...))
	}
}

// read decodes one ring's records into batches until ctx ends, then what is
// left. A batch goes out when full, and when the ring has been quiet for
// batchWait.
func (e *Engine) read(ctx context.Context, r *ring, out chan<- []event.Event) error {
	b := e.newBatches(out)
	return r.follow(ctx, func(rec []byte) error {
		b.add(rec)
		return nil
	}, b.send)
}

// batches decodes records into batches of batchSize for out: the rings'
// readers and the spool's loader each have one.
type batches struct {
	e     *Engine
	dec   *decoder
	out   chan<- []event.Event
	batch []event.Event
}

func (e *Engine) newBatches(out chan<- []event.Event) *batches {
	return &batches{e: e, dec: newDecoder(), out: out, batch: make([]event.Event, 0, batchSize)}
}

// add decodes one record (one that does not decode is dropped and counted
// as lost), completes what must be read while its process is still there,
// and sends the batch once it is full.
func (b *batches) add(rec []byte) {
	ev, err := b.dec.decode(rec)
	if err != nil {
		b.e.undecodable.Add(1)
		return
	}
	switch v := ev.(type) {
	case *event.File:
		b.e.resolver.complete(v)
	case *event.Exec:
		v.Cgroup = event.EncodeText(sysinfo.Host.Cgroup(v.PID))
		v.Service = event.EncodeText(sysinfo.Host.ServiceName(v.PID))
	case *event.OffCPU:
		b.batch = append(b.batch, b.e.limits.seen(v)...)
	}
	b.batch = append(b.batch, ev)
	if x := b.dec.takeExtra(); x != nil {
		b.batch = append(b.batch, x)
	}
	if len(b.batch) >= batchSize {
		b.send()
	}
}

// send sends what the batch holds, if anything.
func (b *batches) send() error {
	if len(b.batch) > 0 {
		b.out <- b.batch
		b.batch = make([]event.Event, 0, batchSize)
	}
	return nil
}
