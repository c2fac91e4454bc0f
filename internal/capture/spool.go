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

// A spool decouples draining the ring buffer from storing what it held. At a
// million events a second the store (~0.5 µs a row, most of it DuckDB's own
// statistics and compression) cannot keep up, and the kernel drops what the
// ring cannot hold; copying a record's bytes to a file costs a tenth of that. A loader decodes the file behind the
// reader, as fast as the store takes the events, and catches up at the end.
//
// The file is unlinked at once: it holds no name and disappears with whyslow.
// Records are stored as a 4-byte length and the record's bytes.

const (
	spoolChunk = 1 << 20
	punchEvery = 64 << 20
)

type spool struct {
	mu      sync.Mutex // the fills of several rings: held by putBlock and flushShared
	f       *os.File
	written atomic.Int64 // bytes published to the loader
	loaded  atomic.Int64 // bytes the loader has read
	holding atomic.Bool  // the loader waits for the CPUs (pace.go)
	// holdMax is the backlog up to which the loader waits for the CPUs
	// (pace.go); past it, it loads whatever the CPUs' business.
	holdMax int64
	more    chan struct{} // a flush happened (capacity 1)
	ended   chan struct{} // the reader wrote its last record
	size    int64         // bytes written
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".whyslow-spool-*")
	if err != nil {
		return nil, fmt.Errorf("creating the spool: %w", err)
	}
	os.Remove(f.Name())
	return &spool{f: f, more: make(chan struct{}, 1), ended: make(chan struct{}),
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
	return s.written.Load() - s.loaded.Load()
}

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

// flush publishes what was written to the loader.
func (s *spool) flush() {
	s.written.Store(s.size)
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// fill drains rings into the spool until ctx ends, then what is left.
// Each ring's records gather in a block of its own that goes into the spool
// whole, so a ring's records keep their order and the rings interleave by
// block; the spool is flushed for the loader when a chunk is full, and when
// a ring has been quiet for batchWait.
func (e *Engine) fill(ctx context.Context, rings []*ring, s *spool) error {
	defer close(s.ended)
	errc := make(chan error, len(rings))
	for _, r := range rings {
		go func() {
			var block []byte
			put := func() error {
				err := s.putBlock(block, e.opts.spoolCopy)
				block = block[:0]
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

// spoolBlock is how much of one ring's records fill gathers before it
// writes them into the spool.
const spoolBlock = 64 << 10

func appendRecord(b, rec []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec)))
	return append(b, rec...)
}

// putBlock writes records, as appendRecord frames them, into the spool
// (and to cp, if any), and publishes them to the loader a chunk at a time.
// Safe for the fill of each ring at once. A block goes to the file as it
// is: a buffer in between was one more copy of every byte.
func (s *spool) putBlock(block []byte, cp io.Writer) error {
	if len(block) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(block); err != nil {
		return fmt.Errorf("writing the spool: %w", err)
	}
	s.size += int64(len(block))
	if cp != nil {
		cp.Write(block)
	}
	if s.size-s.written.Load() >= spoolChunk-spoolBlock {
		s.flush()
	}
	return nil
}

// flushShared is flush for the fills of several rings.
func (s *spool) flushShared() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush()
}

// load decodes the spool behind fill, in batches, until fill has ended and
// every record is out; paced by pace (nil: as fast as it goes).
func (e *Engine) load(s *spool, out chan<- []event.Event, pace *pacer) error {
	defer s.f.Close()
	b := e.newBatches(out)
	buf := make([]byte, 0, 2*spoolChunk)
	var off, punched int64
	for {
		avail := s.written.Load()
		if off == avail {
			b.send()
			select {
			case <-s.more:
				continue
			case <-s.ended:
				if s.written.Load() == off {
					return nil
				}
				continue
			}
		}
		if !s.done() && avail-off < s.holdMax && pace.hold(time.Now()) {
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
			if held := avail - off; held > e.heldMost.Load() {
				e.heldMost.Store(held)
			}
			s.holding.Store(false)
		}
		n := min(avail-off, spoolChunk)
		start := len(buf)
		buf = buf[:start+int(n)]
		if _, err := s.f.ReadAt(buf[start:], off); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the spool: %w", err)
		}
		off += n
		s.loaded.Store(off)
		if off-punched >= punchEvery {
			// What is loaded is dropped: the spool holds the backlog only.
			unix.Fallocate(int(s.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, off&^(4095))
			punched = off
		}
		// Whole records go out; a record cut by the chunk waits for the next.
		p := buf
		for len(p) >= 4 {
			l := int(binary.LittleEndian.Uint32(p))
			if len(p) < 4+l {
				break
			}
			b.add(p[4 : 4+l])
			p = p[4+l:]
		}
		buf = append(buf[:0], p...)
	}
}
