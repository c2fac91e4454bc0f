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
	st := newStacks(e.maps.Stacks, &e.ownStacks)
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
	send := func() {
		if len(batch) > 0 {
			out <- batch
			batch = make([]event.Event, 0, batchSize)
		}
	}
	w := newRingWait(ctx, rd)
	for {
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
			if len(batch) >= batchSize {
				send()
			}
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, ringbuf.ErrFlushed) {
			send()
			if errors.Is(err, ringbuf.ErrClosed) {
				return nil
			}
			return err
		}
		// The ring is empty: what was read goes out, and the reader sleeps.
		send()
		if w.stopped {
			return nil
		}
		w.wait()
	}
}

// ringWait is how a reader waits for records: on a Go timer, polling the
// ring's positions in memory, never in the kernel. A reader blocked in
// epoll_wait is a goroutine in a syscall, and each entry into one woke Go's
// sysmon, which then polled every 20 µs for a millisecond or more: ~600
// wakeups a second while nothing happened, a thread competing with the
// traced program for its CPUs. The programs wake nobody below a quarter-full
// ring anyway (wake_events); the poll is quicker while the ring fills fast.
type ringWait struct {
	ctx     context.Context
	rd      *ringbuf.Reader
	t       *time.Timer
	next    time.Duration
	stopped bool // ctx ended: what is left is read, then the reader stops
}

const (
	pollIdle = batchWait            // the ring held little at the last look
	pollBusy = 5 * time.Millisecond // it held an eighth of its size or more
)

func newRingWait(ctx context.Context, rd *ringbuf.Reader) *ringWait {
	rd.SetDeadline(time.Now()) // ReadInto never blocks: an empty ring is ErrDeadlineExceeded
	return &ringWait{ctx: ctx, rd: rd, t: time.NewTimer(pollIdle), next: pollIdle}
}

// wait sleeps until the ring holds records or ctx ends (stopped).
func (w *ringWait) wait() {
	if w.ctx.Err() != nil {
		w.stopped = true
		return
	}
	for {
		w.t.Reset(w.next)
		select {
		case <-w.ctx.Done():
			w.stopped = true
			return
		case <-w.t.C:
		}
		n := w.rd.AvailableBytes()
		w.next = pollIdle
		if n >= w.rd.BufferSize()/8 {
			w.next = pollBusy
		}
		if n > 0 {
			return
		}
	}
}
