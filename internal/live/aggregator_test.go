package live

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

const ms = uint64(1_000_000)

func testAggregator(start uint64) *Aggregator {
	a := NewAggregator(start)
	a.names.cgroupOf = func(uint32) string { return "/test.slice" }
	a.names.commOf = func(uint32) string { return "" }
	a.names.devices[8<<20] = "sda"
	return a
}

// A wait that spans a cut is counted once: its part before the cut in the
// first frame, the rest (with its run-queue tail) in the second.
func TestWaitSpanningCutsIsCountedOnce(t *testing.T) {
	a := testAggregator(0)
	// thread 11 of process 10 went off CPU at 200 ms, in a sync
	inProgress := &event.OffCPU{Header: event.Header{Time: 1000 * ms, PID: 10, TID: 11}, Off: 800 * ms,
		State: 'D', Reason: event.ReasonSync}
	f1 := a.Cut(1000*ms, []*event.OffCPU{inProgress})
	if got := f1.Procs[10].Wait[event.ReasonSync]; got != 800*ms {
		t.Fatalf("frame 1 sync = %d ms, want 800", got/ms)
	}
	// it ran again at 1700 ms, woken at 1600 ms
	a.Feed([]event.Event{&event.OffCPU{Header: event.Header{Time: 1700 * ms, PID: 10, TID: 11, Comm: "syncer"},
		Off: 1500 * ms, Runq: 100 * ms, State: 'D', Reason: event.ReasonSync}})
	f2 := a.Cut(2000*ms, nil)
	p := f2.Procs[10]
	if p.Wait[event.ReasonSync] != 600*ms || p.Wait[event.ReasonRunqueue] != 100*ms {
		t.Fatalf("frame 2: sync %d ms, runqueue %d ms; want 600 and 100", p.Wait[event.ReasonSync]/ms, p.Wait[event.ReasonRunqueue]/ms)
	}
	if p.Comm != "syncer" || p.Cgroup != "/test.slice" {
		t.Errorf("named %q in %q", p.Comm, p.Cgroup)
	}
	if p.Lost() != 700*ms {
		t.Errorf("lost %d ms, want 700", p.Lost()/ms)
	}
}

// A new wait of the same thread is not mistaken for the one counted before.
func TestNewWaitIsNotReducedByAnOldOne(t *testing.T) {
	a := testAggregator(0)
	a.Cut(1000*ms, []*event.OffCPU{{Header: event.Header{Time: 1000 * ms, PID: 1, TID: 1}, Off: 500 * ms, State: 'S', Reason: event.ReasonSleep}})
	// the first wait ended (its event reached us) and a second began at 1200 ms
	a.Feed([]event.Event{
		&event.OffCPU{Header: event.Header{Time: 1100 * ms, PID: 1, TID: 1}, Off: 600 * ms, State: 'S', Reason: event.ReasonSleep},
		&event.OffCPU{Header: event.Header{Time: 1900 * ms, PID: 1, TID: 1}, Off: 700 * ms, State: 'S', Reason: event.ReasonSleep},
	})
	f := a.Cut(2000*ms, nil)
	if got := f.Procs[1].Wait[event.ReasonSleep]; got != 800*ms {
		t.Fatalf("sleep %d ms, want 100 + 700", got/ms)
	}
}

// The file of a wait comes from the blocked syscall around it; writeback is
// counted for the process that dirtied the file; block requests for their
// device and file.
func TestObjectsAndAttribution(t *testing.T) {
	a := testAggregator(0)
	out := event.FileRef{Dev: 7<<20 | 1, Ino: 42, Kind: event.KindRegular}
	a.Feed([]event.Event{
		&event.File{Header: event.Header{PID: 20}, Ref: out, Path: "/mnt/slow/out\x1b[31m"},
		&event.Dirtied{Header: event.Header{Time: 100 * ms, PID: 20, TID: 20, Comm: "dd"}, File: out, Pages: 256},
		&event.OffCPU{Header: event.Header{Time: 400 * ms, PID: 20, TID: 20, Comm: "dd"}, Off: 200 * ms, State: 'S',
			Reason: event.ReasonDirtyThrottle},
		&event.Syscall{Header: event.Header{Time: 150 * ms, PID: 20, TID: 20}, Dur: 260 * ms, Nr: 1, Ret: 1 << 20,
			Blocked: true, File: out},
		&event.Throttle{Header: event.Header{PID: 20, TID: 20}, Pause: 190 * ms},
		&event.Writeback{Header: event.Header{PID: 99, TID: 99, Comm: "kworker"}, File: out, Pages: 128},
		&event.Block{Header: event.Header{Time: 500 * ms, PID: 99, TID: 99}, InsertTime: 480 * ms, Dev: 8 << 20,
			Op: 1, Bytes: 1 << 20, File: out},
	})
	f := a.Cut(1000*ms, nil)
	p := f.Procs[20]
	o, ns := p.Top()
	if o.File != out || ns != 200*ms {
		t.Fatalf("waited on %+v for %d ms, want the output file for 200", o, ns/ms)
	}
	if name := f.Names[o]; name != `/mnt/slow/out\x1b[31m` {
		t.Errorf("file named %q: the escape must be neutralised", name)
	}
	if p.Dirtied != 1<<20 || p.WrittenBack != 128*4096 || p.Throttled != 190*ms {
		t.Errorf("dirtied %d, written back %d, throttled %d", p.Dirtied, p.WrittenBack, p.Throttled)
	}
	d := f.Devices[8<<20]
	if d == nil || d.Name != "sda" || d.Writes != 1 || d.WriteAwaitNS != 20*ms {
		t.Fatalf("device %+v", d)
	}
	fs := f.Files[out]
	if fs.Written != 1<<20 || fs.DiskWritten != 1<<20 || fs.Waited != 200*ms {
		t.Errorf("file %+v", fs)
	}
	if f.Procs[99].DiskWritten != 1<<20 {
		t.Errorf("the flusher's requests: %d bytes", f.Procs[99].DiskWritten)
	}
}

// With no syscall to name it, a throttled wait is on the file the process
// dirtied most.
func TestHintedObject(t *testing.T) {
	a := testAggregator(0)
	f1 := event.FileRef{Dev: 1, Ino: 1, Kind: event.KindRegular}
	f2 := event.FileRef{Dev: 1, Ino: 2, Kind: event.KindRegular}
	a.Feed([]event.Event{
		&event.Dirtied{Header: event.Header{PID: 5, TID: 5}, File: f1, Pages: 10},
		&event.Dirtied{Header: event.Header{PID: 5, TID: 5}, File: f2, Pages: 99},
		&event.OffCPU{Header: event.Header{Time: 300 * ms, PID: 5, TID: 5}, Off: 100 * ms, State: 'S', Reason: event.ReasonDirtyThrottle},
	})
	f := a.Cut(1000*ms, nil)
	if o, _ := f.Procs[5].Top(); o.File != f2 {
		t.Fatalf("hinted %+v, want the file dirtied most", o)
	}
}

// A thread never shows more than all of an interval. rcu_preempt, always in
// short idle waits, showed 104%: a wait that ended before a cut reached the
// aggregator after it and was counted whole in the next frame, on top of
// that frame's own.
func TestThreadShareIsAtMostTheInterval(t *testing.T) {
	a := testAggregator(0)
	wait := func(end, off uint64) event.Event {
		return &event.OffCPU{Header: event.Header{Time: end, PID: 16, TID: 16, Comm: "rcu_preempt"}, Off: off, State: 'I'}
	}
	var first []event.Event
	for end := 40 * ms; end <= 960*ms; end += 40 * ms {
		first = append(first, wait(end, 40*ms))
	}
	a.Feed(first)
	a.Cut(1000*ms, nil)
	// the wait of 960..1000 ms comes after the cut, with the next frame's
	second := []event.Event{wait(1000*ms, 40*ms)}
	for end := 1040 * ms; end <= 2000*ms; end += 40 * ms {
		second = append(second, wait(end, 40*ms))
	}
	a.Feed(second)
	a.Feed([]event.Event{&event.CPUTime{Header: event.Header{Time: 1500 * ms, PID: 16, TID: 16}, OnCPU: 30 * ms}})
	f := a.Cut(2000*ms, nil)
	p := f.Procs[16]
	total := p.CPU
	for _, ns := range p.Wait {
		total += ns
	}
	if span := f.End - f.Start; total > span {
		t.Fatalf("rcu_preempt: %d ms of a %d ms interval (%.0f%%)", total/ms, span/ms, 100*float64(total)/float64(span))
	}
	th := p.Threads[16]
	if th.CPU != p.CPU || th.Wait[event.ReasonOther] != p.Wait[event.ReasonOther] {
		t.Errorf("the process %+v is not the sum of its one thread %+v", p.Times, th.Times)
	}
}

// Events of an interval that arrive after its cut, before Finish, count in
// it, not in the next.
func TestLateEventsJoinTheirFrame(t *testing.T) {
	a := testAggregator(0)
	a.Seal(1000*ms, nil)
	a.Feed([]event.Event{
		&event.OffCPU{Header: event.Header{Time: 990 * ms, PID: 16, TID: 16}, Off: 40 * ms, State: 'I'},
		&event.OffCPU{Header: event.Header{Time: 1030 * ms, PID: 16, TID: 16}, Off: 40 * ms, State: 'I'},
	})
	f1 := a.Finish()
	f2 := a.Cut(2000*ms, nil)
	if got := f1.Procs[16].Wait[event.ReasonOther]; got != 40*ms {
		t.Errorf("frame 1: %d ms, want the wait that ended in it (40)", got/ms)
	}
	if got := f2.Procs[16].Wait[event.ReasonOther]; got != 40*ms {
		t.Errorf("frame 2: %d ms, want the wait that ended in it (40)", got/ms)
	}
}

// A runnable thread held off by its cgroup's quota lost that time to the
// quota, not to a crowded run queue: in progress at a cut and once ended.
func TestQuotaIsNotRunqueue(t *testing.T) {
	a := testAggregator(0)
	held := &event.OffCPU{Header: event.Header{Time: 1000 * ms, PID: 7, TID: 7}, Off: 80 * ms, State: 'R', Quota: true,
		Reason: event.ReasonCPUQuota}
	f1 := a.Cut(1000*ms, []*event.OffCPU{held})
	if q, r := f1.Procs[7].Wait[event.ReasonCPUQuota], f1.Procs[7].Wait[event.ReasonRunqueue]; q != 80*ms || r != 0 {
		t.Errorf("in progress: quota %d ms, runqueue %d ms; want 80 and 0", q/ms, r/ms)
	}
	a.Feed([]event.Event{&event.OffCPU{Header: event.Header{Time: 1050 * ms, PID: 7, TID: 7}, Off: 130 * ms, State: 'R',
		Quota: true, Reason: event.ReasonCPUQuota}})
	f2 := a.Cut(2000*ms, nil)
	if q, r := f2.Procs[7].Wait[event.ReasonCPUQuota], f2.Procs[7].Wait[event.ReasonRunqueue]; q != 50*ms || r != 0 {
		t.Errorf("ended: quota %d ms, runqueue %d ms; want 50 and 0", q/ms, r/ms)
	}
	if f2.Procs[7].Lost() != 50*ms {
		t.Errorf("lost %d ms, want the quota's 50", f2.Procs[7].Lost()/ms)
	}
}
