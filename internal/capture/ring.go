package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ring reads one BPF ring buffer in place, waiting for records in Go's
// netpoller.
//
// Why not ringbuf.Reader:
//   - It maps the data pages twice, back to back, so a record that wraps
//     reads as one. The kernel maps every page at mmap time, so each ring
//     counted twice in whyslow's resident set: 8 MiB of the default level's
//     ~65 MiB peak, 20 MiB at --full. Here the data is mapped once and the
//     rare record that wraps is copied whole into a scratch buffer.
//   - It waits in epoll_wait, a system call that holds one of the runtime's
//     Ps while it blocks, so the runtime's sysmon kept waking (every 20 µs
//     to 10 ms) to retake it: a twelfth of the recorder's CPU at the default
//     level. Here the wait parks the goroutine on the map's fd in the
//     netpoller (the ring wakes its pollers as it wakes epoll).
//   - It copies each record out; here a record that does not wrap is handed
//     over where it lies, and the consumer moves past it after.
//
// The layout is the kernel's (kernel/bpf/ringbuf.c): page 0 holds the
// consumer position, which the reader writes; page 1 the producer position;
// the data follows, a power of two in size. Each record is an 8-byte header
// (its length, with the busy and discard bits) and its data padded to 8.
type ring struct {
	mu      sync.Mutex // held while reading and by close: no read after unmap
	cons    []byte     // the consumer page, mapped writable
	prod    []byte     // the producer page and the data, mapped read-only, once
	data    []byte
	mask    uint64
	scratch []byte   // a record that wraps, made whole
	f       *os.File // the map's fd, duplicated, in the netpoller
	raw     syscall.RawConn
	stopped atomic.Bool
}

const (
	ringHeaderSize = 8
	ringBusyBit    = 1 << 31
	ringDiscardBit = 1 << 30
	// How often a record still being written is looked at again before a
	// drain leaves it for the next: its program commits it within
	// microseconds, but a drain should not spin on it.
	ringBusyRetries = 1000
)

func newRing(m *ebpf.Map) (*ring, error) {
	size := int(m.MaxEntries())
	page := os.Getpagesize()
	cons, err := unix.Mmap(m.FD(), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the ring buffer's consumer page: %w", err)
	}
	prod, err := unix.Mmap(m.FD(), int64(page), page+size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Munmap(cons)
		return nil, fmt.Errorf("mapping the ring buffer's data: %w", err)
	}
	r := &ring{cons: cons, prod: prod, data: prod[page:], mask: uint64(size - 1)}
	fd, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		r.unmap()
		return nil, fmt.Errorf("duplicating the ring buffer's fd: %w", err)
	}
	// Non-blocking makes os.NewFile add it to the netpoller. The flag is the
	// open file's, shared with the map's fd: bpf(), mmap and epoll ignore it.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		r.unmap()
		return nil, fmt.Errorf("making the ring buffer's fd non-blocking: %w", err)
	}
	f := os.NewFile(uintptr(fd), "ringbuf")
	raw, err := f.SyscallConn()
	if err == nil {
		// Fails when the fd is not in the netpoller: a ring buffer is
		// pollable, so it should not.
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		r.unmap()
		return nil, fmt.Errorf("polling the ring buffer: %w", err)
	}
	r.f, r.raw = f, raw
	return r, nil
}

func (r *ring) consPos() *uint64 { return (*uint64)(unsafe.Pointer(&r.cons[0])) }
func (r *ring) prodPos() *uint64 { return (*uint64)(unsafe.Pointer(&r.prod[0])) }

// available is how many bytes of records the ring holds.
func (r *ring) available() uint64 {
	return atomic.LoadUint64(r.prodPos()) - atomic.LoadUint64(r.consPos())
}

// drain hands fn each record the ring holds now, in order, and returns when
// it is empty, fn fails, or the ring is closed. The bytes fn gets are valid
// only during the call.
func (r *ring) drain(fn func(rec []byte) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cons == nil {
		r.stopped.Store(true)
		return nil
	}
	consPos := r.consPos()
	cons := atomic.LoadUint64(consPos)
	prod := atomic.LoadUint64(r.prodPos())
	busy := 0
	for cons != prod {
		if prod-cons < ringHeaderSize {
			return fmt.Errorf("ring buffer: %d bytes, short of a record header", prod-cons)
		}
		// Loaded atomically: the kernel clears the busy bit with an xchg
		// after writing the data, so seeing it clear orders the data.
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[cons&r.mask])))
		if hdr&ringBusyBit != 0 {
			if busy++; busy > ringBusyRetries {
				return nil
			}
			prod = atomic.LoadUint64(r.prodPos())
			continue
		}
		n := uint64(hdr &^ (ringBusyBit | ringDiscardBit))
		next := cons + ringHeaderSize + (n+7)&^7
		if next-cons > prod-cons {
			return fmt.Errorf("ring buffer: a record of %d bytes, %d there", n, prod-cons)
		}
		if hdr&ringDiscardBit == 0 {
			if err := fn(r.record(cons+ringHeaderSize, n)); err != nil {
				return err
			}
		}
		cons = next
		atomic.StoreUint64(consPos, cons)
		if cons == prod {
			prod = atomic.LoadUint64(r.prodPos())
		}
	}
	return nil
}

// record is the n bytes of data at pos: where they lie, or copied whole
// when they wrap past the end of the data pages.
func (r *ring) record(pos, n uint64) []byte {
	start := pos & r.mask
	if start+n <= uint64(len(r.data)) {
		return r.data[start : start+n : start+n]
	}
	r.scratch = append(r.scratch[:0], r.data[start:]...)
	r.scratch = append(r.scratch, r.data[:n-(uint64(len(r.data))-start)]...)
	return r.scratch
}

// follow hands fn each record as it comes, until ctx ends and what was left
// is read. flush is called when the ring has been quiet for batchWait, and
// at the end: what fn gathers goes on in batches, without waiting long.
func (r *ring) follow(ctx context.Context, fn func(rec []byte) error, flush func() error) error {
	defer r.stopOn(ctx)()
	// The deadline is set once per quiet spell, not per record: time.Now
	// per record is a visible cost at a million a second.
	flushAt := time.Now().Add(batchWait)
	for {
		if err := r.drain(fn); err != nil {
			return err
		}
		if r.stopped.Load() {
			// Stopped before that drain: the ring held nothing more.
			return flush()
		}
		timedOut, err := r.wait(flushAt)
		if err != nil {
			return err
		}
		if timedOut {
			if err := flush(); err != nil {
				return err
			}
			flushAt = time.Now().Add(batchWait)
		}
	}
}

// wait blocks until the ring has records, deadline passes, or stop is
// called. It says whether the deadline passed.
func (r *ring) wait(deadline time.Time) (timedOut bool, err error) {
	if err := r.f.SetReadDeadline(deadline); err != nil {
		return false, err
	}
	err = r.raw.Read(func(uintptr) bool { return r.stopped.Load() || r.hasRecords() })
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true, nil
	}
	return false, err
}

func (r *ring) hasRecords() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cons != nil && r.available() > 0
}

// stopOn stops the ring when ctx ends: a wait returns at once, and the
// reader drains what is left. Call the returned function when done.
func (r *ring) stopOn(ctx context.Context) (done func()) {
	finished := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			r.stopped.Store(true)
			r.f.SetReadDeadline(time.Now())
		case <-finished:
		}
	}()
	return func() {
		close(finished)
	}
}

// close unmaps the ring; a drain after it finds nothing. Closing twice is
// harmless.
func (r *ring) close() error {
	r.stopped.Store(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if r.cons != nil {
		errs = append(errs, r.f.Close(), r.unmap())
	}
	return errors.Join(errs...)
}

func (r *ring) unmap() error {
	if r.cons == nil {
		return nil
	}
	err := errors.Join(unix.Munmap(r.prod), unix.Munmap(r.cons))
	r.cons, r.prod, r.data = nil, nil, nil
	return err
}
