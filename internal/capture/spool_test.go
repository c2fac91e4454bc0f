package capture

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// Through the spool, every record arrives once and in a form the decoder
// knows, and the spool leaves no file behind.
func TestSpoolKeepsEveryEvent(t *testing.T) {
	dir, spoolDir := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "many.out")
	script := `
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for _ in range(50000):
    os.write(fd, b"s")
os.close(fd)
`
	c := runCaptured(t, Options{Level: Full, SpoolDir: spoolDir}, python(t), "-c", script, file)
	c.noLoss(t)
	n := 0
	for _, s := range c.syscalls("write") {
		if c.path(s.File) == file && s.Ret == 1 {
			n++
		}
	}
	if n != 50000 {
		t.Errorf("%d writes of one byte to %s through the spool, want 50000", n, file)
	}
	if left, _ := os.ReadDir(spoolDir); len(left) != 0 {
		t.Errorf("the spool left %d files in %s", len(left), spoolDir)
	}
}

// Blocks keep their order and every record arrives once, whether they wait
// in memory, spill to the file when memory is full, or wait in memory again
// once the loader has read the file to its end: a store that stalls once,
// until the backlog spills, behind a fill that goes on at its pace.
func TestSpoolOrderAcrossSpills(t *testing.T) {
	sp, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sp.memMax = 3 * spoolBlock // a few blocks, then the file
	e := &Engine{}
	out := make(chan []event.Event, 1)
	loadErr := make(chan error, 1)
	go func() {
		loadErr <- e.load(sp, out, nil)
		close(out)
	}()
	const records = 60_000   // ~100 blocks
	beforeSpill := int64(-1) // bytes put in memory before the first spill
	go func() {
		defer close(sp.ended)
		block := sp.newBlock()
		put := func() {
			var err error
			if block, err = sp.putBlock(block, nil); err != nil {
				t.Error(err)
			}
			sp.mu.Lock()
			if beforeSpill < 0 && sp.size > 0 {
				beforeSpill = sp.queued.Load() - sp.size
			}
			sp.mu.Unlock()
		}
		for i, blocks := 0, 0; i < records; i++ {
			w := whyslowSyscallEvent{Nr: 0, Fd2: -1}
			w.H = whyslowHdr{Ts: uint64(i), Pid: 1, Tid: 1, Kind: evSyscall}
			block = appendRecord(block, wire(t, w))
			if len(block) >= spoolBlock {
				put()
				if blocks++; blocks%5 == 0 {
					time.Sleep(2 * time.Millisecond) // a ring's pace
				}
			}
		}
		put()
		sp.flushShared()
	}()
	next, batches := uint64(0), 0
	for batch := range out {
		if batches++; batches == 2 {
			// A store that stalls until the backlog has spilled.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				sp.mu.Lock()
				spilled := sp.size > 0
				sp.mu.Unlock()
				if spilled {
					break
				}
			}
		}
		for _, ev := range batch {
			if ev.Hdr().Time != next {
				t.Fatalf("record %d arrived where %d was due", ev.Hdr().Time, next)
			}
			next++
		}
	}
	if err := <-loadErr; err != nil {
		t.Fatal(err)
	}
	if next != records {
		t.Errorf("%d records of %d arrived", next, records)
	}
	inMemory := sp.queued.Load() - sp.size
	if beforeSpill < 0 || inMemory <= beforeSpill {
		t.Errorf("%d bytes put in memory before the first spill, %d in all, %d in the file: the test did not see memory, file and memory again",
			beforeSpill, inMemory, sp.size)
	}
	if sp.backlog() != 0 {
		t.Errorf("%d bytes left in the spool", sp.backlog())
	}
}
