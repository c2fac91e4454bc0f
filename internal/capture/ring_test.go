package capture

import (
	"context"
	"encoding/binary"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// ringOutput is a program that writes one 8-byte record, n, to rb with the
// given flags (BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP), each time it runs.
func ringOutput(t *testing.T, rb *ebpf.Map, n, flags int64) *ebpf.Program {
	return ringOutputWords(t, rb, n, 1, flags)
}

// ringOutputWords writes a record of words 8-byte words, each n.
func ringOutputWords(t *testing.T, rb *ebpf.Map, n int64, words int16, flags int64) *ebpf.Program {
	t.Helper()
	insns := asm.Instructions{asm.Mov.Imm(asm.R1, int32(n))}
	for i := int16(1); i <= words; i++ {
		insns = append(insns, asm.StoreMem(asm.RFP, -8*i, asm.R1, asm.DWord))
	}
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, rb.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8*int32(words)),
		asm.Mov.Imm(asm.R3, 8*int32(words)),
		asm.Mov.Imm(asm.R4, int32(flags)),
		asm.FnRingbufOutput.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.SocketFilter,
		License:      "GPL",
		Instructions: insns,
	})
	if err != nil {
		t.Fatalf("loading the ring buffer writer: %+v", err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// testRing is a 4 KiB ring buffer and our reader of it, both closed when
// the test ends.
func testRing(t *testing.T) (*ebpf.Map, *ring) {
	t.Helper()
	rb, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rb.Close() })
	r, err := newRing(rb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.close() })
	return rb, r
}

// TestRingWaitsInTheNetpoller: a ring's wait ends when the kernel wakes the
// ring's pollers (a record written with a wakeup), at its deadline when the
// records came without one (they are then read), and at once when the ring
// is stopped; the reader reads every record in order, without waiting.
func TestRingWaitsInTheNetpoller(t *testing.T) {
	requirePrivileges(t)
	const forceWakeup, noWakeup = 2, 1
	rb, r := testRing(t)
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
		var got []uint64
		err := r.drain(func(rec []byte) error {
			if len(rec) != 8 {
				t.Errorf("a record of %d bytes, want 8", len(rec))
				return nil
			}
			got = append(got, binary.LittleEndian.Uint64(rec))
			return nil
		})
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("read %v (%v), want %v", got, err, want)
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

// TestRingRecordsThatWrap: the data pages are mapped once, so a record that
// runs past their end is read whole from both ends; the consumer moves on
// after each record, so the ring never fills, and a closed ring reads
// nothing.
func TestRingRecordsThatWrap(t *testing.T) {
	requirePrivileges(t)
	const words = 5 // 48 bytes with the header: records straddle 4096 often
	rb, r := testRing(t)
	wrapped := 0
	for i := range int64(300) { // 3.5 times round the ring
		p := ringOutputWords(t, rb, i, words, 1)
		for range 2 {
			if _, err := p.Run(&ebpf.RunOptions{Data: make([]byte, 14)}); err != nil {
				t.Fatalf("writing record %d: %v", i, err)
			}
		}
		p.Close()
		if start := (atomic.LoadUint64(r.consPos()) + ringHeaderSize) & r.mask; start+8*words > 4096 {
			wrapped++
		}
		n := 0
		err := r.drain(func(rec []byte) error {
			n++
			if len(rec) != 8*words {
				t.Fatalf("record %d: %d bytes, want %d", i, len(rec), 8*words)
			}
			for w := range words {
				if v := binary.LittleEndian.Uint64(rec[8*w:]); v != uint64(i) {
					t.Fatalf("record %d, word %d: %d", i, w, v)
				}
			}
			return nil
		})
		if err != nil || n != 2 {
			t.Fatalf("record %d: read %d of 2 (%v)", i, n, err)
		}
	}
	if wrapped == 0 {
		t.Fatal("no record wrapped: the test did not test")
	}
	if err := r.close(); err != nil {
		t.Fatalf("closing: %v", err)
	}
	if err := r.drain(func([]byte) error { t.Fatal("a record after close"); return nil }); err != nil || !r.stopped.Load() {
		t.Fatalf("draining a closed ring: %v, stopped %v", err, r.stopped.Load())
	}
}
