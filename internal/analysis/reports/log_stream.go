package reports

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// StreamLog calls each with every streamed operation in time order, as it
// reads them, from one goroutine: nothing is held but a few batches (each
// may keep a copy of the op, never the pointer). Names (processes, syscalls, files) are looked up in
// maps read once, not joined per row: the scan then runs at the speed of
// DuckDB's numeric columns (millions of rows a second), for the whole
// recording printed to a pipe as babeltrace2 and perf script users do.
func StreamLog(s *source.Source, f source.Filter, limit int, each func(*Op) error) error {
	s, release, err := s.Hold()
	if err != nil {
		return err
	}
	defer release()
	names, err := loadLogNames(s)
	if err != nil {
		return err
	}
	where, args := whereOf(f, rawCols)
	slices, err := logSlices(s, where, args)
	if err != nil {
		return err
	}
	// Reading (DuckDB's sort and scan, the driver) and the caller's work
	// (formatting, writing) run side by side, a batch apart: on two cores
	// that is most of the difference between 1.7M and 3M rows a second.
	p := newLogPipe()
	done := make(chan error, 1)
	go func() { done <- p.write(each) }()
	b := <-p.free
	b.n = 0
	sent := 0
	row := func(v []driver.Value) error {
		if limit > 0 && sent == limit {
			return errStopped
		}
		sent++
		b.decode(v, names, s.Clock, f)
		if b.n == len(b.ops) {
			var err error
			if b, err = p.send(b); err != nil {
				return err
			}
		}
		return nil
	}
	var rerr error
	for i, sl := range slices {
		// Each slice of time sorted on its own (sql/log.sql).
		if rerr = rawRows(s, sqlWhere("log_slice", where), append(args[:len(args):len(args)], sl[0], sl[1], i == len(slices)-1), row); rerr != nil {
			break
		}
	}
	if errors.Is(rerr, errStopped) && limit > 0 && sent == limit {
		rerr = nil // --max-rows reached
	}
	if rerr == nil && b.n > 0 {
		p.full <- b
	}
	close(p.full)
	werr := <-done
	switch {
	case werr != nil:
		return werr
	case rerr != nil:
		return fmt.Errorf("listing operations: %w", rerr)
	}
	return nil
}

// logSlice is a range of begin times [lo, hi) of the log.
type logSlice [2]uint64

// logRowsPerSlice: slices of about this many rows, sorted one at a time.
const logRowsPerSlice = 1 << 20

// logSlices cuts the selected rows' time range into slices of about
// logRowsPerSlice rows each (by time, evenly: a busy moment makes a slice
// bigger, never wrong). DuckDB's zone maps skip the row groups outside a
// slice, so the slices together cost about one sort of the whole.
func logSlices(s *source.Source, where string, args []any) ([]logSlice, error) {
	var lo, hi, n sql.NullInt64
	if err := s.QueryRow(sqlWhere("log_range", where), args...).Scan(&lo, &hi, &n); err != nil {
		return nil, fmt.Errorf("listing operations: %w", err)
	}
	if !lo.Valid || n.Int64 == 0 {
		return nil, nil
	}
	k := max(1, n.Int64/logRowsPerSlice)
	span := uint64(hi.Int64-lo.Int64)/uint64(k) + 1
	out := make([]logSlice, 0, k)
	for i := range uint64(k) {
		out = append(out, logSlice{uint64(lo.Int64) + i*span, uint64(lo.Int64) + (i+1)*span})
	}
	return out, nil
}

// opBatch carries rows from the reader to the caller's goroutine.
type opBatch struct {
	ops   [1024]Op
	sizes [1024]int64
	n     int
}

// decode fills the batch's next op from a row of log_slice (sql/log.sql),
// its names looked up, its times also on the wall clock; Outside: it began
// or ended beyond the filter's window.
func (b *opBatch) decode(v []driver.Value, names *logNames, clock source.Clock, f source.Filter) {
	o := &b.ops[b.n]
	o.Begin, o.DurNS = store.Uint64(v[0]), store.Uint64(v[1])
	o.End = o.Begin + o.DurNS
	sc := names.syscalls[uint16(store.Uint64(v[2]))]
	o.Syscall, o.Class = sc.name, sc.class
	o.Ret = store.Int64(v[3])
	o.PID, o.TID = uint32(store.Uint64(v[4])), uint32(store.Uint64(v[5]))
	o.Comm = names.comms[int64(store.Uint64(v[6]))]
	o.FD = int32(store.Int64(v[7]))
	o.Path = names.files[fileKey{uint32(store.Uint64(v[8])), store.Uint64(v[9]), uint32(store.Uint64(v[10]))}]
	o.Size = nil
	if sc.movesBytes && o.Ret >= 0 {
		b.sizes[b.n] = o.Ret
		o.Size = &b.sizes[b.n]
	}
	o.BeginAt, o.EndAt = clock.Wall(o.Begin), clock.Wall(o.End)
	o.Outside = (f.Begin != 0 && o.Begin < f.Begin) || (f.End != 0 && o.End > f.End)
	b.n++
}

// logPipe passes batches of ops from the reader to the caller's goroutine:
// three go round, full then free again, so that neither waits for the
// other but at a batch's end.
type logPipe struct {
	full, free chan *opBatch
	stop       chan struct{} // closed when the caller's work failed
}

func newLogPipe() *logPipe {
	p := &logPipe{full: make(chan *opBatch, 2), free: make(chan *opBatch, 3), stop: make(chan struct{})}
	for range 3 {
		p.free <- &opBatch{}
	}
	return p
}

// write calls each on every op of every full batch, in order, and frees
// the batch. At the first error it stops the reader (at its next batch) and
// takes what it still sends: three batches, room for three, never blocks.
func (p *logPipe) write(each func(*Op) error) error {
	var err error
	for b := range p.full {
		for i := 0; i < b.n && err == nil; i++ {
			err = each(&b.ops[i])
		}
		p.free <- b
		if err != nil {
			close(p.stop)
			for b := range p.full {
				p.free <- b
			}
		}
	}
	return err
}

// send hands a full batch to the caller and returns a free one; after the
// caller stopped, b itself and errStopped.
func (p *logPipe) send(b *opBatch) (*opBatch, error) {
	select {
	case p.full <- b:
	case <-p.stop:
		return b, errStopped
	}
	next := <-p.free
	next.n = 0
	return next, nil
}

// errStopped: the caller's work failed (its pipe closed); reading stops.
var errStopped = errors.New("stopped")

type fileKey struct {
	dev uint32
	ino uint64
	gen uint32
}

type syscallName struct {
	name, class string
	movesBytes  bool
}

// logNames are the dimension tables the log names rows by.
type logNames struct {
	comms    map[int64]string
	syscalls map[uint16]syscallName
	files    map[fileKey]string
}

func loadLogNames(s *source.Source) (*logNames, error) {
	n := &logNames{comms: map[int64]string{}, syscalls: map[uint16]syscallName{}, files: map[fileKey]string{}}
	rows, err := s.Query("SELECT comm_id, comm FROM comms")
	if err != nil {
		return nil, fmt.Errorf("reading names: %w", err)
	}
	for rows.Next() {
		var id int64
		var c sql.NullString
		if rows.Scan(&id, &c) == nil {
			n.comms[id] = c.String
		}
	}
	rows.Close()
	if rows, err = s.Query("SELECT nr, name, class FROM syscall_names"); err != nil {
		return nil, fmt.Errorf("reading names: %w", err)
	}
	for rows.Next() {
		var nr uint16
		var name, class sql.NullString
		if rows.Scan(&nr, &name, &class) == nil {
			n.syscalls[nr] = syscallName{name.String, class.String, event.SyscallMovesBytes(name.String)}
		}
	}
	rows.Close()
	if rows, err = s.Query("SELECT dev, ino, gen, coalesce(path, peer, '') FROM file_names"); err != nil {
		return nil, fmt.Errorf("reading names: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k fileKey
		var p string
		if rows.Scan(&k.dev, &k.ino, &k.gen, &p) == nil {
			n.files[k] = p
		}
	}
	return n, rows.Err()
}
