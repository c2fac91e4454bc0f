// Package storetest builds small recordings for tests that need no root: the
// events a capture would have produced, written by the store's own writer
// into a temporary directory, so analyses, output and exports can be tested
// on data whose every number the test knows.
package storetest

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver
	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// StartMono is when every fixture recording begins (CLOCK_MONOTONIC ns), and
// StartWall the wall time it maps to.
const StartMono = 1_000_000_000

var StartWall = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// At is the monotonic time ms milliseconds after the recording began.
func At(ms float64) uint64 { return StartMono + MS(ms) }

// MS is a duration of ms milliseconds in nanoseconds.
func MS(ms float64) uint64 { return uint64(math.Round(ms * 1e6)) }

// Device is a block device as the recording's devices table names it. The
// writer records the machine's own devices; a fixture replaces them, so its
// output does not depend on the machine that runs the test.
type Device struct {
	Dev              uint32
	Name             string
	ThrottleReadBPS  uint64
	ThrottleWriteBPS uint64
}

// Recording is a recording being built.
type Recording struct {
	t       testing.TB
	Path    string
	w       *store.Writer
	lost    map[string]uint64
	devices []Device
	ifaces  [][2]string
	stacks  map[string]int32
}

// New creates an empty recording named name in t's temporary directory, with
// the metadata a capture writes (clock mapping, host) and meta over it.
func New(t testing.TB, name string, meta map[string]string) *Recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatalf("creating fixture recording: %v", err)
	}
	m := map[string]string{
		"clock_offset_ns": strconv.FormatInt(StartWall.UnixNano()-StartMono, 10),
		"start_mono":      strconv.Itoa(StartMono),
		"start_wall":      StartWall.Format(time.RFC3339Nano),
		"host":            "fixture", "kernel": "6.1.0-fixture", "arch": "amd64", "whyslow_version": "fixture",
		"flavour": "tp_btf", "missing": "", "level": "full", "slow_ns": "1000000",
	}
	for k, v := range meta {
		m[k] = v
	}
	if err := w.SetMeta(m); err != nil {
		t.Fatal(err)
	}
	return &Recording{t: t, Path: path, w: w, lost: map[string]uint64{}, stacks: map[string]int32{}}
}

// Add appends events, as the recorder does with each batch.
func (r *Recording) Add(evs ...event.Event) {
	r.t.Helper()
	r.w.Write(evs)
	if err := r.w.Err(); err != nil {
		r.t.Fatalf("writing fixture events: %v", err)
	}
}

// Lost counts events lost from source.
func (r *Recording) Lost(source string, n uint64) { r.lost[source] += n }

// Device adds a block device to the devices table.
func (r *Recording) Device(d Device) { r.devices = append(r.devices, d) }

// Interface adds a network address to the interfaces table.
func (r *Recording) Interface(name, addr string) { r.ifaces = append(r.ifaces, [2]string{name, addr}) }

// Close finishes the recording and returns its path. The machine's devices and
// interfaces the writer recorded are replaced by the fixture's.
func (r *Recording) Close() string {
	r.t.Helper()
	if err := r.w.Close(r.lost); err != nil {
		r.t.Fatalf("closing fixture recording: %v", err)
	}
	db, err := sql.Open("duckdb", r.Path)
	if err != nil {
		r.t.Fatalf("reopening fixture recording: %v", err)
	}
	defer db.Close()
	exec := func(q string, args ...any) {
		if _, err := db.Exec(q, args...); err != nil {
			r.t.Fatalf("fixture recording: %s: %v", q, err)
		}
	}
	exec("DELETE FROM devices")
	exec("DELETE FROM interfaces")
	for _, d := range r.devices {
		exec("INSERT INTO devices VALUES (?, ?, '', 0, 0, false, ?, ?)", d.Dev, d.Name, d.ThrottleReadBPS, d.ThrottleWriteBPS)
	}
	for _, i := range r.ifaces {
		exec("INSERT INTO interfaces VALUES (?, ?)", i[0], i[1])
	}
	exec("CHECKPOINT")
	return r.Path
}

// Thread is a traced thread, the source of events.
type Thread struct {
	PID, TID uint32
	Comm     string
}

// At is the thread's event header at ms.
func (th Thread) At(ms float64) event.Header {
	return event.Header{Time: At(ms), PID: th.PID, TID: th.TID, Comm: th.Comm}
}

// Nr is the syscall number of name; a name whyslow does not know is a bug in the test.
func Nr(name string) uint32 {
	for nr, n := range event.SyscallNames() {
		if n[0] == name {
			return uint32(nr)
		}
	}
	panic(fmt.Sprintf("storetest: unknown syscall %q", name))
}

// Call is a streamed syscall of th on file f from ms, lasting durMS.
func (th Thread) Call(name string, ms, durMS float64, fd int32, ret int64, f event.FileRef) *event.Syscall {
	return &event.Syscall{Header: th.At(ms), Dur: MS(durMS), Nr: Nr(name), FD: fd, FD2: -1, Ret: ret, File: f}
}

// Blocked is a streamed syscall that went off CPU inside.
func (th Thread) Blocked(name string, ms, durMS float64, fd int32, ret int64, f event.FileRef) *event.Syscall {
	c := th.Call(name, ms, durMS, fd, ret, f)
	c.Blocked = true
	return c
}

// Off is an off-CPU interval of th from fromMS to toMS for reason, in syscall
// (empty: none), with its kernel stack, woken by waker (zero: an interrupt or
// a timer) runqMS before it ran again.
func (r *Recording) Off(th Thread, fromMS, toMS float64, reason event.Reason, syscall string, waker Thread, runqMS float64, stack ...string) *event.OffCPU {
	o := &event.OffCPU{Header: th.At(toMS), Off: MS(toMS - fromMS), Runq: MS(runqMS), State: 'S', StackID: -1, Syscall: -1,
		WakerPID: waker.PID, WakerTID: waker.TID, WakerComm: waker.Comm, Reason: reason, Stack: stack}
	switch reason {
	case event.ReasonRunqueue:
		o.State, o.Runq = 'R', o.Off
	case event.ReasonCPUQuota:
		o.State, o.Runq, o.Quota = 'R', 0, true
	case event.ReasonDiskRead, event.ReasonDiskWrite, event.ReasonDirtyThrottle, event.ReasonSync:
		o.State = 'D'
	}
	if syscall != "" {
		o.Syscall = int32(Nr(syscall))
	}
	if len(stack) == 0 {
		stack = r.stackFor(o, reason)
		o.Stack = stack
	}
	if len(stack) > 0 {
		key := fmt.Sprint(stack)
		id, ok := r.stacks[key]
		if !ok {
			id = int32(len(r.stacks) + 1)
			r.stacks[key] = id
		}
		o.StackID = id
	}
	return o
}

// canonicalStacks are a kernel stack for each reason, innermost first, for
// a wait a test gave no stack: readers derive a wait's reason from its
// facts (store/reasons.go), so a fixture's must say what the test means.
var canonicalStacks = map[event.Reason][]string{
	event.ReasonDiskRead:      {"io_schedule", "folio_wait_bit_common", "filemap_read"},
	event.ReasonDiskWrite:     {"io_schedule", "folio_wait_writeback"},
	event.ReasonDirtyThrottle: {"io_schedule_timeout", "balance_dirty_pages"},
	event.ReasonNetwork:       {"schedule_timeout", "sk_wait_data"},
	event.ReasonLock:          {"futex_wait_queue", "futex_wait"},
	event.ReasonSleep:         {"do_nanosleep"},
	event.ReasonChild:         {"do_wait"},
	event.ReasonIPC:           {"pipe_read"},
}

// stackFor is the stack a wait needs for its facts to give reason: none
// when they already do, else the reason's canonical one. A reason the facts
// cannot give (sync named on a call that does not sync) fails the test.
func (r *Recording) stackFor(o *event.OffCPU, reason event.Reason) []string {
	in := classify.Input{State: o.State, Syscall: o.Syscall, FileKind: o.FileKind, WakerKind: o.WakerFile.Kind, WakerSyscall: o.WakerSyscall, Quota: o.Quota}
	if !slices.Contains(event.Reasons, reason) || reason.Derived() || classify.Reason(in) == reason {
		return nil // none, or a word the analyses derive (idle)
	}
	in.Frames = canonicalStacks[reason]
	if got := classify.Reason(in); got != reason {
		r.t.Fatalf("storetest: a %s wait in syscall %d cannot be told %s (its facts give %s)", string(o.State), o.Syscall, reason, got)
	}
	return in.Frames
}

// Block is a block request th issued for file f (the device's own inode for
// metadata), completed at ms after queueMS in the queue and serviceMS at the device.
func Block(th Thread, ms, queueMS, serviceMS float64, dev uint32, op event.BlockOp, bytes uint32, sector uint64, f event.FileRef) *event.Block {
	h := th.At(ms)
	return &event.Block{Header: h, InsertTime: h.Time - MS(queueMS+serviceMS), IssueTime: h.Time - MS(serviceMS),
		Dev: dev, Op: op, Bytes: bytes, Sector: sector, File: f}
}

// Totals is the syscalls level's aggregate of count calls of name by th on f
// over [fromMS, toMS], each about eachNS long.
func Totals(th Thread, name string, fromMS, toMS float64, f event.FileRef, count, bytes, eachNS uint64) *event.SyscallTotals {
	slots := make([]uint64, 32)
	slots[min(int(math.Log2(float64(max(eachNS, 1)))), 31)] = count
	return &event.SyscallTotals{Header: th.At(fromMS), Last: At(toMS), Nr: Nr(name), File: f, Count: count, Bytes: bytes,
		TotalNS: count * eachNS, MaxNS: eachNS + eachNS/4, Slots: slots}
}
