package capture

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// ring reads one ring buffer, waiting for records in Go's netpoller.
//
// ringbuf.Reader waits in epoll_wait, a system call that holds one of the
// runtime's Ps for as long as it blocks (up to batchWait). With Ps held, the
// runtime's sysmon keeps waking (every 20 µs to 10 ms) to retake them: at the
// default level, a twelfth of the recorder's CPU time went to sysmon and its
// sleeps. Here the wait parks the goroutine on the ring's fd in the netpoller
// (the ring wakes its pollers as it wakes epoll), and the Reader only reads,
// never blocking.
type ring struct {
	rd      *ringbuf.Reader
	f       *os.File // the map's fd, duplicated, in the netpoller
	raw     syscall.RawConn
	stopped atomic.Bool
}

func newRing(rd *ringbuf.Reader, m *ebpf.Map) (*ring, error) {
	r := &ring{rd: rd}
	fd, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the ring buffer's fd: %w", err)
	}
	// Non-blocking makes os.NewFile add it to the netpoller. The flag is the
	// open file's, shared with the map's fd: bpf(), mmap and epoll ignore it.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("making the ring buffer's fd non-blocking: %w", err)
	}
	f := os.NewFile(uintptr(fd), "ringbuf")
	raw, err := f.SyscallConn()
	if err == nil {
		// Fails when the fd is not in the netpoller: a ring buffer is
		// pollable (the Reader's own epoll needs it), so it should not.
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("polling the ring buffer: %w", err)
	}
	r.f, r.raw = f, raw
	// The Reader never waits: its deadline is long past.
	rd.SetDeadline(time.Unix(1, 0))
	return r, nil
}

// next reads the next record there is, without waiting: false when the ring
// is empty, or the Reader was closed (and the ring is stopped).
func (r *ring) next(rec *ringbuf.Record) (bool, error) {
	err := r.rd.ReadInto(rec)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, ringbuf.ErrFlushed):
		return false, nil
	case errors.Is(err, ringbuf.ErrClosed):
		r.stopped.Store(true)
		return false, nil
	}
	return false, err
}

// wait blocks until the ring has records, deadline passes, or stop is
// called. It says whether the deadline passed.
func (r *ring) wait(deadline time.Time) (timedOut bool, err error) {
	if err := r.f.SetReadDeadline(deadline); err != nil {
		return false, err
	}
	err = r.raw.Read(func(uintptr) bool { return r.rd.AvailableBytes() > 0 || r.stopped.Load() })
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true, nil
	}
	return false, err
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
		r.f.Close()
	}
}
