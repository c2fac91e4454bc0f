package watch

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOTLPSenderDrops: past otlpQueued waiting incidents the newest is
// dropped; an export that fails is dropped too; each is counted and said,
// and adding never blocks.
func TestOTLPSenderDrops(t *testing.T) {
	f, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1)")
	}
	var log strings.Builder
	o := &Options{Exe: f, Dir: t.TempDir(), OTLP: "http://127.0.0.1:1/v1/traces", Log: &log, Counters: &Counters{}}
	s := newOTLPSender(o, &ownChildren{})
	for i := 0; i < otlpQueued+2; i++ {
		s.add(Incident{Name: "x", PID: 1})
	}
	if n := o.Counters.OTLPDropped.Load(); n != 2 {
		t.Errorf("%d dropped with the queue full, want 2", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.run(ctx)
	s.close()
	if n, sent := o.Counters.OTLPDropped.Load(), o.Counters.OTLPSent.Load(); n != otlpQueued+2 || sent != 0 {
		t.Errorf("%d dropped, %d sent, want every one of %d dropped: the export fails", n, sent, otlpQueued+2)
	}
	all := strconv.Itoa(otlpQueued + 2)
	if !strings.Contains(log.String(), "("+all+" dropped so far)") || !strings.Contains(log.String(), "dropped: "+all) {
		t.Errorf("the drops are not said:\n%s", log.String())
	}
}

// TestOTLPSenderProtocol: with OTLPProtocol grpc, the export an incident
// is sent by speaks gRPC to the endpoint as given.
func TestOTLPSenderProtocol(t *testing.T) {
	dir := t.TempDir()
	args := filepath.Join(dir, "args")
	exe := filepath.Join(dir, "export")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"$@\" > "+args+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := &Options{Exe: exe, Dir: dir, OTLP: "http://127.0.0.1:4317", OTLPProtocol: "grpc", Log: io.Discard, Counters: &Counters{}}
	s := newOTLPSender(o, &ownChildren{})
	s.add(Incident{Name: "inc", PID: 7})
	go s.run(context.Background())
	s.close()
	got, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	if want := "export otlp " + filepath.Join(dir, "inc.db") + " --endpoint http://127.0.0.1:4317 --protocol grpc --critical-path --pid 7"; strings.TrimSpace(string(got)) != want {
		t.Errorf("export run as %q, want %q", got, want)
	}
	if o.Counters.OTLPSent.Load() != 1 {
		t.Errorf("sent %d, want 1", o.Counters.OTLPSent.Load())
	}
}
