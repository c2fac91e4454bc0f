package capture

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf/ringbuf"
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
// handing events to sink until ctx is done; then it reads what is left and
// returns. Off-CPU intervals still open at the end are closed at that moment.
func (e *Engine) Run(ctx context.Context, sink Sink) error {
	out := make(chan []event.Event, 256) // about a million events of slack for bursts
	st := newStacks(e.maps.Stacks)
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	readers := []*ringbuf.Reader{e.events, e.meta}
	if e.opts.SpoolDir != "" {
		// The busy ring goes through a spool file; its backlog is on disk,
		// not in the channel.
		out = make(chan []event.Event, 16)
		sp, err := newSpool(e.opts.SpoolDir)
		if err != nil {
			return err
		}
		readers = readers[1:]
		wg.Add(2)
		go func() {
			defer wg.Done()
			errc <- e.fill(ctx, e.events, sp)
		}()
		go func() {
			defer wg.Done()
			errc <- e.load(sp, out)
		}()
	} else {
		errc <- nil
	}
	for _, rd := range readers {
		wg.Add(1)
		go func(rd *ringbuf.Reader) {
			defer wg.Done()
			errc <- e.read(ctx, rd, out)
		}(rd)
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
	for b := range out {
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
			}
		}
		if owns > 0 {
			b = slices.DeleteFunc(b, func(ev event.Event) bool { _, own := ev.(*ownStack); return own })
		}
		sink(append(b, extra...))
	}
	<-done
	var errs []error
	for range 3 {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) read(ctx context.Context, rd *ringbuf.Reader, out chan<- []event.Event) error {
	dec := newDecoder()
	var rec ringbuf.Record
	batch := make([]event.Event, 0, batchSize)
	flushAt := time.Now().Add(batchWait)
	stopping := false
	rd.SetDeadline(flushAt)
	defer flushOnStop(ctx, rd)()
	for {
		if ctx.Err() != nil && !stopping {
			stopping = true
			rd.SetDeadline(time.Now()) // read what is buffered, then stop
		}
		err := rd.ReadInto(&rec)
		if err == nil {
			ev, derr := dec.decode(rec.RawSample)
			if derr == nil {
				switch v := ev.(type) {
				case *event.File:
					e.resolver.complete(v)
				case *event.Exec:
					v.Cgroup = sysinfo.Host.Cgroup(v.PID) // read now, while the process is surely there
				}
				batch = append(batch, ev)
				if x := dec.takeExtra(); x != nil {
					batch = append(batch, x)
				}
			}
		} else if errors.Is(err, ringbuf.ErrClosed) {
			stopping = true
		} else if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, ringbuf.ErrFlushed) {
			return err
		}
		timedOut := err != nil
		// The deadline is set once per batch, not per record: time.Now per
		// event is a visible cost at a million events a second.
		if len(batch) >= batchSize || (timedOut && !stopping) {
			if len(batch) > 0 {
				out <- batch
				batch = make([]event.Event, 0, batchSize)
			}
			flushAt = time.Now().Add(batchWait)
			if !stopping {
				rd.SetDeadline(flushAt)
			}
		}
		if stopping && timedOut {
			if len(batch) > 0 {
				out <- batch
			}
			return nil
		}
	}
}

// flushOnStop wakes a reader blocked in ReadInto as soon as ctx ends, so that
// stopping does not wait out the batch deadline; call the returned function
// when the reader is done.
func flushOnStop(ctx context.Context, rd *ringbuf.Reader) (done func()) {
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			rd.Flush()
		case <-stopped:
		}
	}()
	return func() { close(stopped) }
}
