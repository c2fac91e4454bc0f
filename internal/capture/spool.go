package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"golang.org/x/sys/unix"
)

// A spool decouples draining the ring buffers from storing what they held.
// At a million events a second the store (~0.5 µs a row, most of it
// DuckDB's compression and appends) cannot keep up, and the kernel drops
// what a ring cannot hold; copying a record's bytes aside costs a tenth of
// that. A loader decodes the spool behind the readers, as fast as the store
// takes the events, and catches up at the end.
//
// Records wait in blocks (a 4-byte length and the record's bytes, each),
// in memory up to spoolMemory. A backlog beyond that spills to a file, in
// order: once a block has spilled, every block after it does too, until the
// loader has read the file to its end. The file's round trip (a write, a
// read, the page cache between) was a tenth of the pipeline's cost when
// every block took it. The file is unlinked at once: it holds no name and
// disappears with whyslow.

const (
	spoolChunk = 1 << 20 // the most the loader reads from the file at once
	punchEvery = 64 << 20
	// spoolBlock is how much of one ring's records fill gathers before it
	// puts them into the spool.
	spoolBlock = 64 << 10
	// spoolMemory bounds the blocks waiting in memory: a quarter of a
	// second of --full's records at two million a second.
	spoolMemory = 16 << 20
	// spoolFree bounds the loaded blocks kept for the fills to reuse.
	spoolFree = 16
)

type spool struct {
	mu sync.Mutex // held by putBlock, flushShared and the loader's next
	f  *os.File
	// mem are the blocks waiting in memory, oldest first, all older than
	// the file's unread bytes; free the blocks loaded, to reuse.
	mem, free [][]byte
	memBytes  int
	memMax    int
	spilling  bool         // blocks go to the file until the loader has read it all
	size      int64        // bytes written to the file
	signalled int64        // size when the loader was last told of the file
	queued    atomic.Int64 // bytes put, in memory or in the file
	loaded    atomic.Int64 // bytes the loader has taken
	holding   atomic.Bool  // the loader waits for the CPUs (pace.go)
	// holdMax is the backlog up to which the loader waits for the CPUs
	// (pace.go); past it, it loads whatever the CPUs' business.
	holdMax int64
	more    chan struct{} // something was put (capacity 1)
	ended   chan struct{} // the fills put their last block
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".whyslow-spool-*")
	if err != nil {
		return nil, fmt.Errorf("creating the spool: %w", err)
	}
	os.Remove(f.Name())
	return &spool{f: f, memMax: spoolMemory, more: make(chan struct{}, 1), ended: make(chan struct{}),
		holdMax: holdMax(dir)}, nil
}

// spoolHoldMax bounds the backlog the spool holds while its loader leaves
// the CPUs to the traced work: ~6 s of two fio jobs' calls here, in
// the page cache of a disk's file system rather than written to it.
const spoolHoldMax = 1 << 30

// holdMax is spoolHoldMax, or a quarter of the space free in dir if that
// is less: the spool shares its file system with the recording.
func holdMax(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0
	}
	return min(spoolHoldMax, int64(st.Bavail)*st.Bsize/4)
}

// Held is how much of the capture waits in the spool, in bytes, while the
// loader leaves the CPUs to the traced work (pace.go); 0 when it loads.
func (e *Engine) Held() int64 {
	s := e.spooling.Load()
	if s == nil || !s.holding.Load() {
		return 0
	}
	return s.backlog()
}

// backlog is how many bytes were put and not yet loaded.
func (s *spool) backlog() int64 { return s.queued.Load() - s.loaded.Load() }

// HeldMost is the most the spool held at once while its loader left the
// CPUs to the traced work, in bytes: 0 if it never did.
func (e *Engine) HeldMost() int64 { return e.heldMost.Load() }

// done says whether fill has written its last record.
func (s *spool) done() bool {
	select {
	case <-s.ended:
		return true
	default:
		return false
	}
}

// signal tells the loader something was put.
func (s *spool) signal() {
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// fill drains rings into the spool until ctx ends, then what is left.
// Each ring's records gather in a block of its own that goes into the spool
// whole, so a ring's records keep their order and the rings interleave by
// block; a block goes in when full, and when its ring has been quiet for
// batchWait.
func (e *Engine) fill(ctx context.Context, rings []*ring, s *spool) error {
	defer close(s.ended)
	errc := make(chan error, len(rings))
	for _, r := range rings {
		go func() {
			block := s.newBlock()
			put := func() (err error) {
				block, err = s.putBlock(block, e.opts.spoolCopy)
				return err
			}
			errc <- r.follow(ctx, func(rec []byte) error {
				block = appendRecord(block, rec)
				if len(block) >= spoolBlock {
					return put()
				}
				return nil
			}, func() error {
				if err := put(); err != nil {
					return err
				}
				s.flushShared()
				return nil
			})
		}()
	}
	var errs []error
	for range rings {
		errs = append(errs, <-errc)
	}
	return errors.Join(errs...)
}

func appendRecord(b, rec []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec)))
	return append(b, rec...)
}

// putBlock puts records, as appendRecord frames them, into the spool (and
// copies them to cp, if any), and returns the block to fill next: block
// itself, emptied, or another when the spool keeps it in memory. Safe for
// the fill of each ring at once.
func (s *spool) putBlock(block []byte, cp io.Writer) ([]byte, error) {
	if len(block) == 0 {
		return block, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cp != nil {
		cp.Write(block)
	}
	if !s.spilling && s.memBytes+len(block) <= s.memMax {
		s.mem = append(s.mem, block)
		s.memBytes += len(block)
		s.queued.Add(int64(len(block)))
		s.signal()
		return s.newBlockLocked(), nil
	}
	s.spilling = true
	if _, err := s.f.Write(block); err != nil {
		return block[:0], fmt.Errorf("writing the spool: %w", err)
	}
	s.size += int64(len(block))
	s.queued.Add(int64(len(block)))
	if s.size-s.signalled >= spoolChunk-spoolBlock {
		// The loader reads the file a chunk at a time.
		s.signalled = s.size
		s.signal()
	}
	return block[:0], nil
}

// flushShared tells the loader of whatever the file holds: a ring was quiet.
func (s *spool) flushShared() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signalled = s.size
	s.signal()
}

func (s *spool) newBlock() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newBlockLocked()
}

func (s *spool) newBlockLocked() []byte {
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free = s.free[:n-1]
		return b
	}
	return make([]byte, 0, spoolBlock+4096)
}

// next is what the loader takes next, once it has read the file up to off:
// the oldest block in memory, or else how many of the file's bytes it is
// to read (up to a chunk), or nothing (nil, 0) when nothing waits.
func (s *spool) next(off int64) ([]byte, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mem) > 0 {
		b := s.mem[0]
		s.mem[0] = nil
		s.mem = s.mem[1:]
		s.memBytes -= len(b)
		return b, 0
	}
	n := min(s.size-off, spoolChunk)
	if off+n == s.size {
		// The loader reads the file to its end (a whole block's) before it
		// looks here again: blocks put from now on are newer, and may wait
		// in memory again.
		s.spilling = false
	}
	return nil, n
}

// recycle keeps a loaded block for a fill to reuse.
func (s *spool) recycle(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.free) < spoolFree {
		s.free = append(s.free, b[:0])
	}
}

// load decodes the spool behind fill, in batches, until fill has ended and
// every record is out; paced by pace (nil: as fast as it goes).
func (e *Engine) load(s *spool, out chan<- []event.Event, pace *pacer) error {
	defer s.f.Close()
	b := e.newBatches(out)
	buf := make([]byte, 0, 2*spoolChunk)
	var off, punched int64
	for {
		backlog := s.backlog()
		if backlog == 0 {
			b.send()
			select {
			case <-s.more:
			case <-s.ended:
				if s.backlog() == 0 {
					return nil
				}
			}
			continue
		}
		if !s.done() && backlog < s.holdMax && pace.hold(time.Now()) {
			// The CPUs are the traced work's (pace.go).
			b.send()
			s.holding.Store(true)
			select {
			case <-s.ended:
			case <-time.After(paceEvery):
			}
			continue
		}
		if s.holding.Load() {
			// Loading again (the CPUs are free, the capture ended or the
			// bound is reached): what it holds now is the most this hold
			// held, the backlog having only grown meanwhile.
			if backlog > e.heldMost.Load() {
				e.heldMost.Store(backlog)
			}
			s.holding.Store(false)
		}
		block, n := s.next(off)
		if block != nil {
			b.addFramed(block) // a block holds whole records
			s.loaded.Add(int64(len(block)))
			s.recycle(block)
			continue
		}
		if n == 0 {
			// A block is counted in queued under the lock that places it:
			// a backlog with nothing placed is a bug, not a wait.
			return fmt.Errorf("the spool counts %d bytes it does not hold", backlog)
		}
		start := len(buf)
		buf = buf[:start+int(n)]
		if _, err := s.f.ReadAt(buf[start:], off); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the spool: %w", err)
		}
		off += n
		s.loaded.Add(n)
		if off-punched >= punchEvery {
			// What is loaded is dropped: the file holds the backlog only.
			unix.Fallocate(int(s.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, off&^(4095))
			punched = off
		}
		// Whole records go out; a record cut by the chunk waits for the next.
		buf = append(buf[:0], b.addFramed(buf)...)
	}
}

// addFramed adds the whole records of p, as appendRecord frames them, and
// returns what is left: the start of a record cut short.
func (b *batches) addFramed(p []byte) (rest []byte) {
	for len(p) >= 4 {
		l := int(binary.LittleEndian.Uint32(p))
		if len(p) < 4+l {
			break
		}
		b.add(p[4 : 4+l])
		p = p[4+l:]
	}
	return p
}
