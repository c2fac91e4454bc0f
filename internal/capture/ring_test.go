package capture

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"
)

// ringOutput is a program that writes one 8-byte record, n, to rb with the
// given flags (BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP), each time it runs.
func ringOutput(t *testing.T, rb *ebpf.Map, n, flags int64) *ebpf.Program {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SocketFilter,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R1, int32(n)),
			asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
			asm.LoadMapPtr(asm.R1, rb.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -8),
			asm.Mov.Imm(asm.R3, 8),
			asm.Mov.Imm(asm.R4, int32(flags)),
			asm.FnRingbufOutput.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("loading the ring buffer writer: %+v", err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// TestRingWaitsInTheNetpoller: a ring's wait ends when the kernel wakes the
// ring's pollers (a record written with a wakeup), at its deadline when the
// records came without one (they are then read), and at once when the ring
// is stopped; the reader reads every record in order, without waiting.
func TestRingWaitsInTheNetpoller(t *testing.T) {
	requirePrivileges(t)
	const forceWakeup, noWakeup = 2, 1
	rb, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	rd, err := ringbuf.NewReader(rb)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r, err := newRing(rd, rb)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := r.stopOn(ctx)
	defer done()
	woken := ringOutput(t, rb, 1, forceWakeup)
	quiet := ringOutput(t, rb, 2, noWakeup)
	write := func(p *ebpf.Program, after time.Duration) {
		time.Sleep(after)
		if _, err := p.Run(&ebpf.RunOptions{Data: make([]byte, 14)}); err != nil {
			t.Errorf("writing a record: %v", err)
		}
	}
	read := func(want ...uint64) {
		t.Helper()
		var rec ringbuf.Record
		for _, w := range want {
			ok, err := r.next(&rec)
			if err != nil || !ok || len(rec.RawSample) < 8 || binary.LittleEndian.Uint64(rec.RawSample) != w {
				t.Fatalf("reading record %d: %v, %v, %x", w, ok, err, rec.RawSample)
			}
		}
		if ok, err := r.next(&rec); ok || err != nil {
			t.Fatalf("a record too many (%x) or %v", rec.RawSample, err)
		}
	}
	read()

	go write(woken, 50*time.Millisecond)
	start := time.Now()
	timedOut, err := r.wait(start.Add(5 * time.Second))
	if took := time.Since(start); err != nil || timedOut || took > 2*time.Second {
		t.Fatalf("a record with a wakeup: the wait ended after %v (timed out %v, %v)", took, timedOut, err)
	}
	read(1)

	go write(quiet, 50*time.Millisecond)
	start = time.Now()
	timedOut, err = r.wait(start.Add(300 * time.Millisecond))
	if took := time.Since(start); err != nil || !timedOut || took < 250*time.Millisecond {
		t.Fatalf("a record without wakeup: the wait ended after %v (timed out %v, %v), want at the deadline", took, timedOut, err)
	}
	read(2)

	// A record waiting before the wait began: no wait at all.
	write(quiet, 0)
	write(woken, 0)
	if timedOut, err := r.wait(time.Now().Add(5 * time.Second)); err != nil || timedOut {
		t.Fatalf("records already there: timed out %v, %v", timedOut, err)
	}
	read(2, 1)

	go func() {
		time.Sleep(50 * time.Millisecond)
		stop()
	}()
	start = time.Now()
	if _, err := r.wait(start.Add(5 * time.Second)); err != nil || time.Since(start) > 2*time.Second || !r.stopped.Load() {
		t.Fatalf("stopping: the wait ended after %v (%v), stopped %v", time.Since(start), err, r.stopped.Load())
	}
}
