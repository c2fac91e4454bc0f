package capture

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/target"
)

// captured is what one run of a workload produced.
type captured struct {
	pid    uint32
	events []event.Event
	files  map[event.FileRef]*event.File
	lost   map[string]uint64
	opened uint64 // CLOCK_MONOTONIC as the gate opened: the command's time starts
}

// runCaptured runs argv as a gated child with only its target set captured,
// and returns every event after the child exits.
func runCaptured(t *testing.T, opts Options, argv ...string) *captured {
	t.Helper()
	return runCapturedWatching(t, opts, nil, argv...)
}

// runCapturedWatching is runCaptured with each batch also shown to watch,
// from the engine's goroutine, as it comes.
func runCapturedWatching(t *testing.T, opts Options, watch func(*Engine, []event.Event), argv ...string) *captured {
	t.Helper()
	return runCapturedBeside(t, opts, nil, watch, argv...)
}

// runCapturedBeside is runCapturedWatching with the processes others
// (attached to, as attach does) captured too.
func runCapturedBeside(t *testing.T, opts Options, others []uint32, watch func(*Engine, []event.Event), argv ...string) *captured {
	t.Helper()
	requirePrivileges(t)
	eng, err := Open(opts)
	if err != nil {
		t.Fatalf("opening engine: %v", err)
	}
	defer eng.Close()
	g, err := target.Start(argv)
	if err != nil {
		t.Fatalf("starting %v: %v", argv, err)
	}
	c := &captured{pid: uint32(g.PID()), files: map[event.FileRef]*event.File{}}
	for _, pid := range append([]uint32{c.pid}, others...) {
		if err := eng.AddTarget(pid); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	done := make(chan error, 1)
	go func() {
		done <- eng.Run(ctx, func(b []event.Event) {
			mu.Lock()
			c.events = append(c.events, b...)
			mu.Unlock()
			if watch != nil {
				watch(eng, b)
			}
		})
	}()
	c.opened = monotonicNow()
	if err := eng.Released(c.pid); err != nil {
		t.Fatal(err)
	}
	if err := g.Open(); err != nil {
		t.Fatal(err)
	}
	code, err := g.Wait()
	if err != nil || code != 0 {
		t.Fatalf("workload %v: exit %d, %v", argv, code, err)
	}
	time.Sleep(300 * time.Millisecond) // let block completions and writeback land
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("reading events: %v", err)
	}
	if c.lost, err = eng.Lost(); err != nil {
		t.Fatal(err)
	}
	for _, ev := range c.events {
		if f, ok := ev.(*event.File); ok {
			c.files[f.Ref] = f
		}
	}
	return c
}

func (c *captured) path(r event.FileRef) string {
	if f, ok := c.files[r]; ok {
		return f.Path
	}
	return ""
}

func eventsOf[T event.Event](c *captured) []T {
	var out []T
	for _, ev := range c.events {
		if v, ok := ev.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func (c *captured) syscalls(name string) []*event.Syscall {
	var out []*event.Syscall
	for _, s := range eventsOf[*event.Syscall](c) {
		if event.SyscallName(int32(s.Nr)) == name {
			out = append(out, s)
		}
	}
	return out
}

func (c *captured) noLoss(t *testing.T) {
	t.Helper()
	for src, n := range c.lost {
		// A switch the kernel did not report (some guest kernels skip a
		// few in tens of thousands) is counted as unseen_wait and its wait
		// rebuilt from the kernel's CPU account (sched.bpf.h): not a loss
		// of whyslow's. TestUnseenSwitchesRebuilt holds it to that.
		if n != 0 && src != event.LostRebuilt {
			t.Errorf("lost %d %s events on a light workload", n, src)
		}
	}
}
