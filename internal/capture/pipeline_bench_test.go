package capture

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/target"
	"golang.org/x/sys/unix"
)

// BenchmarkPipeline measures what whyslow does behind the ring buffer, on
// one CPU: a --full capture's records, copied as the spool took them, are
// replayed through the spool, the decoder, the completion of stacks and
// waits, and (store) DuckDB's appenders, as fast as they go. The kernel's
// side (the ring's writes) is not in it: its cost is the floor's (section
// 1b of BENCHMARKS.md). Reported: events a second, on CPU 0 with
// GOMAXPROCS=1, and (store-all-cpus) on every CPU, as whyslow runs.
//
//	go test -run '^$' -bench Pipeline -benchtime 3x ./internal/capture/
func BenchmarkPipeline(b *testing.B) {
	requirePrivileges(b)
	dir := b.TempDir()
	copyPath := filepath.Join(dir, "records")
	eng, records := captureRecords(b, dir, copyPath)
	defer eng.Close()
	// Every record is an event but whyslow's own stacks, which name
	// frames rather than being stored as events.
	m, unmap := mapRecords(b, copyPath)
	wanted := records - ownStackRecords(m)
	unmap()
	for _, stage := range []string{"decode", "store", "store-backlog", "store-all-cpus"} {
		b.Run(stage, func(b *testing.B) {
			// A source as fast as the pipeline: the replay puts a block
			// when the spool has room for it in memory. store-backlog's
			// source is faster: the backlog spills to the file.
			keepUp := stage != "store-backlog"
			if stage != "store-all-cpus" {
				restore := onOneCPU(b)
				defer restore()
			}
			var events atomic.Int64
			var took time.Duration
			for i := range b.N {
				sink := func(batch []event.Event) { events.Add(int64(len(batch))) }
				var w *store.Writer
				if stage != "decode" {
					var err error
					path := filepath.Join(dir, "replay-"+strconv.Itoa(i)+".db")
					os.Remove(path) // an earlier round's (the benchmark runs again with a larger b.N)
					if w, err = store.Create(path); err != nil {
						b.Fatal(err)
					}
					sink = func(batch []event.Event) { events.Add(int64(len(batch))); w.Write(batch) }
				}
				records, unmap := mapRecords(b, copyPath)
				start := time.Now()
				err := eng.replay(records, dir, sink, keepUp)
				if w != nil {
					err = errors.Join(err, w.Close(nil))
				}
				took += time.Since(start)
				unmap()
				if err != nil {
					b.Fatal(err)
				}
			}
			perRun := float64(events.Load()) / float64(b.N)
			if perRun < float64(wanted) {
				b.Fatalf("%.0f events out of %d records (%d of them events)", perRun, records, wanted)
			}
			b.ReportMetric(float64(events.Load())/took.Seconds(), "events/s")
			b.ReportMetric(perRun, "events/run")
		})
	}
}

// captureRecords records dd's two million one-byte reads and writes at
// --full, keeping a copy of every record the spool took. The engine stays
// open: the stacks the records name are read from its map.
func captureRecords(b *testing.B, dir, copyPath string) (*Engine, int) {
	b.Helper()
	out, err := os.Create(copyPath)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	copied := &countingWriter{w: bufio.NewWriterSize(out, 1<<20)}
	eng, err := Open(Options{Level: Full, SpoolDir: dir, spoolCopy: copied})
	if err != nil {
		b.Fatalf("opening engine: %v", err)
	}
	g, err := target.Start([]string{"dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=1000000", "status=none"})
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.AddTarget(uint32(g.PID())); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx, func([]event.Event) {}) }()
	if err := g.Open(); err != nil {
		b.Fatal(err)
	}
	g.Wait()
	time.Sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if err := copied.w.Flush(); err != nil {
		b.Fatal(err)
	}
	if copied.records < 1_000_000 {
		b.Fatalf("only %d records captured", copied.records)
	}
	return eng, copied.records
}

// ownStackRecords counts the stack records among records, as the spool
// frames them: whyslow's own stacks, which become no event.
func ownStackRecords(records []byte) int {
	n := 0
	for p := records; len(p) >= 4; {
		l := int(binary.LittleEndian.Uint32(p))
		if len(p) < 4+l {
			break
		}
		if rec := p[4 : 4+l]; len(rec) > int(kindOffset) && rec[kindOffset] == evStack {
			n++
		}
		p = p[4+l:]
	}
	return n
}

// countingWriter counts the records of the spool's framing (a length,
// then that many bytes) in what it copies: whole blocks of a ring's
// records, as the spool writes them.
type countingWriter struct {
	w       *bufio.Writer
	records int
	head    []byte // a length not yet whole
	left    int    // bytes of the current record still to come
}

func (c *countingWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		if c.left > 0 {
			n := min(c.left, len(rest))
			c.left -= n
			rest = rest[n:]
			continue
		}
		n := min(4-len(c.head), len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
		if len(c.head) == 4 {
			c.left = int(binary.LittleEndian.Uint32(c.head))
			c.head = c.head[:0]
			c.records++
		}
	}
	return c.w.Write(p)
}

// onOneCPU runs the process, every thread of it and those it starts, on
// CPU 0 with GOMAXPROCS=1; restore puts back what was.
func onOneCPU(b *testing.B) (restore func()) {
	b.Helper()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		b.Fatal(err)
	}
	var one unix.CPUSet
	one.Set(0)
	setAll := func(set *unix.CPUSet) {
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				unix.SchedSetaffinity(tid, set)
			}
		}
	}
	setAll(&one)
	procs := runtime.GOMAXPROCS(1)
	return func() {
		runtime.GOMAXPROCS(procs)
		setAll(&was)
	}
}

// memoryFull says whether a block of n bytes would spill.
func (s *spool) memoryFull(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spilling || s.memBytes+n > s.memMax
}

// replay feeds records, as the spool holds them, through the spool and the
// rest of the pipeline behind the ring (decode, completion, sink) as fast
// as it goes: the pipeline's own capacity, without the kernel. The stacks
// the records name are read from this engine's map, as at capture. The
// records are read from memory, as the reader reads the ring's mapping.
//
// mapRecords maps the copied records' file: read(2) into a buffer would
// add a copy the ring's reader does not make.
func mapRecords(b *testing.B, path string) ([]byte, func()) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		b.Fatal(err)
	}
	return m, func() { unix.Munmap(m) }
}
func (e *Engine) replay(records []byte, dir string, sink Sink, keepUp bool) error {
	sp, err := newSpool(dir)
	if err != nil {
		return err
	}
	out := make(chan []event.Event, 4)
	errc := make(chan error, 2)
	go func() {
		// As fill does: each ring's records framed into blocks, a block
		// into the spool when full.
		defer close(sp.ended)
		block := sp.newBlock()
		for p := records; ; {
			if len(p) < 4 {
				_, err := sp.putBlock(block, nil)
				sp.flushShared()
				errc <- err
				return
			}
			n := int(binary.LittleEndian.Uint32(p))
			if len(p) < 4+n {
				errc <- io.ErrUnexpectedEOF
				return
			}
			block = appendRecord(block, p[4:4+n])
			p = p[4+n:]
			if len(block) >= spoolBlock {
				for keepUp && sp.memoryFull(len(block)) {
					time.Sleep(100 * time.Microsecond)
				}
				var err error
				if block, err = sp.putBlock(block, nil); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	go func() {
		errc <- e.load(sp, out, nil)
		close(out)
	}()
	e.consume(out, nil, newStacks(e.maps.Stacks, &e.ownStacks), sink)
	return errors.Join(<-errc, <-errc)
}
