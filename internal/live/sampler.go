package live

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
)

// Sampler runs a system-wide capture and cuts it into frames.
type Sampler struct {
	// Every is the frame length (1 s when zero).
	Every time.Duration
	// Capture is the engine's options; SystemWide and DescribedFiles are
	// forced (capture.LiveDescribedFiles: the frames keep as many names).
	Capture capture.Options
	// ProcRoot and SysRoot are where /proc and /sys are ("/proc", "/sys" when empty).
	ProcRoot, SysRoot string
	// Tee, if set, is also given every batch of events, after the frames
	// took it and from the engine's goroutine (whyslow watch keeps them).
	Tee capture.Sink
	// Waiting, if set, is given the waits in progress at each cut.
	Waiting func(now uint64, waiting []*event.OffCPU)
	// Opened, if set, is given the engine's reader of waits in progress
	// once capture is loaded, to read them at any moment.
	Opened func(*capture.Waits)
	// Undescribe, if set, is given the engine's capture.Engine.Undescribe
	// once capture is loaded: a caller that keeps files' descriptions (the
	// Tee's) hands it each one it forgets, so the kernel describes the
	// file again when next met.
	Undescribe func(undescribe func(event.FileRef))
}

// giveBackEvery is how often a view gives the memory it no longer uses
// back to the system.
const giveBackEvery = time.Minute

// lateEvents is how long a frame stays open after its cut to the events
// of its interval still on their way: a few of the readers' batch periods.
const lateEvents = 200 * time.Millisecond

// Info is what the capture says of itself, for health and headers.
type Info struct {
	Flavour string
	Missing []string
}

// Run starts capture and calls onFrame with each frame until ctx ends.
// ready, if not nil, is called once capture is attached. onFrame is called
// from one goroutine; a slow onFrame delays the next cut, it loses nothing.
func (s Sampler) Run(ctx context.Context, ready func(Info), onFrame func(*Frame)) error {
	every := s.Every
	if every <= 0 {
		every = time.Second
	}
	opts := s.Capture
	opts.SystemWide = true
	opts.DescribedFiles = capture.LiveDescribedFiles
	eng, err := capture.Open(opts)
	if err != nil {
		return fmt.Errorf("starting capture: %w", err)
	}
	defer eng.Close()
	// The rings are read in batches (every 50 ms when quiet): the events of
	// an interval are all fed a little after its end, and are waited for.
	c := s.newCutter(eng, onFrame, min(lateEvents, every/4))

	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	runDone := make(chan error, 1)
	go func() { runDone <- eng.Run(runCtx, c.sink(s.Tee)) }()
	if ready != nil {
		ready(Info{Flavour: eng.Flavour(), Missing: eng.Missing()})
	}
	// The engine hands over on-CPU time once a second: cutting half a second
	// after its hand-over puts each one in the frame it belongs to, not the
	// next. The first frame is that much longer.
	select {
	case <-time.After(every + every/2):
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		c.cut(ctx)
	}
	return c.loop(ctx, every, stop, runDone)
}

// cutter cuts what the engine feeds its aggregator into frames, adding the
// system's counters and the engine's losses to each.
type cutter struct {
	eng     *capture.Engine
	waits   *capture.Waits
	sys     *systemReader
	agg     *Aggregator
	late    time.Duration // how long a frame waits for its late events
	waiting func(now uint64, waiting []*event.OffCPU)
	onFrame func(*Frame)
}

// newCutter makes the aggregator, starting now, and hands the engine's
// readers to the callers that asked for them; it reads the system's busy
// counters a first time, to take differences from.
func (s Sampler) newCutter(eng *capture.Engine, onFrame func(*Frame), late time.Duration) *cutter {
	procRoot, sysRoot := s.ProcRoot, s.SysRoot
	if procRoot == "" {
		procRoot = "/proc"
	}
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	c := &cutter{eng: eng, sys: newSystemReader(procRoot, sysRoot), waits: eng.Waits(),
		late: late, waiting: s.Waiting, onFrame: onFrame}
	if s.Opened != nil {
		s.Opened(eng.Waits())
	}
	now, _ := c.waits.Now()
	c.agg = NewAggregator(now)
	c.agg.names.undescribe = eng.Undescribe
	if s.Undescribe != nil {
		s.Undescribe(eng.Undescribe)
	}
	c.sys.read(c.agg.cur) // the first busy counters, to take differences from
	return c
}

// sink is what the engine feeds: the aggregator, then tee when set.
func (c *cutter) sink(tee capture.Sink) capture.Sink {
	sink := c.agg.Feed
	if tee != nil {
		sink = func(b []event.Event) { c.agg.Feed(b); tee(b) }
	}
	return sink
}

// cut seals the frame at the waits' clock, with the waits in progress,
// waits for its late events, and hands it over.
func (c *cutter) cut(ctx context.Context) {
	now, waiting := c.waits.Now()
	c.agg.Seal(now, waiting)
	if c.waiting != nil {
		c.waiting(now, waiting)
	}
	select {
	case <-time.After(c.late):
	case <-ctx.Done():
	}
	f := c.agg.Finish()
	c.sys.read(f)
	if lost, err := c.eng.Lost(); err == nil {
		f.Lost = lost
	}
	c.onFrame(f)
}

// loop cuts a frame every interval until ctx ends (then stops the engine's
// reading and returns its error, if any but the cancel) or the reading
// ends by itself, which is an error: the view would go on empty.
func (c *cutter) loop(ctx context.Context, every time.Duration, stop func(), runDone <-chan error) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	give := time.NewTicker(giveBackEvery)
	defer give.Stop()
	for {
		select {
		case <-give.C:
			// A view runs for weeks with a few MiB live and much more
			// garbage through it: left to the runtime, the pages the heap
			// once used stay resident, a little more each minute under
			// process churn (BENCHMARKS.md, "Long runs"). A collection and
			// the free pages handed back, once a minute: ~2 ms.
			debug.FreeOSMemory()
		case <-ctx.Done():
			stop()
			runErr := <-runDone
			if errors.Is(runErr, context.Canceled) {
				runErr = nil
			}
			return runErr
		case runErr := <-runDone:
			// reading the ring buffers failed: the view would go on empty
			return fmt.Errorf("reading events: %w", errors.Join(runErr, errors.New("capture stopped")))
		case <-tick.C:
			c.cut(ctx)
		}
	}
}
