package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

func wait(end, off uint64, tid uint32, reason event.Reason, state byte) *event.OffCPU {
	return &event.OffCPU{Header: event.Header{Time: end, PID: tid, TID: tid, Comm: "app"}, Off: off, Reason: reason, State: state}
}

func userStalls(over time.Duration) *stalls {
	s := newStalls(over)
	s.isKernel = func(uint32) bool { return false }
	return s
}

// One long wait on storage fires once, whether seen in progress, finished,
// or both; a sleep as long does not.
func TestStallFiresOncePerWait(t *testing.T) {
	s := userStalls(time.Second)
	if tr := s.inProgress(wait(1500*ms, 1200*ms, 1, event.ReasonSync, 'D')); tr == nil || tr.At != 300*ms || tr.Kind != KindStall {
		t.Fatalf("a sync 1.2 s so far: %+v", tr)
	}
	if tr := s.finished(wait(2000*ms, 1700*ms, 1, event.ReasonSync, 'D')); tr != nil {
		t.Errorf("the same wait fired again when it ended: %+v", tr)
	}
	if tr := s.finished(wait(9000*ms, 3000*ms, 2, event.ReasonSleep, 'S')); tr != nil {
		t.Errorf("a sleep fired: %+v", tr)
	}
	if tr := s.finished(wait(9000*ms, 900*ms, 3, event.ReasonDiskRead, 'D')); tr != nil {
		t.Errorf("a wait under the threshold fired: %+v", tr)
	}
}

// Dirty throttling comes in pauses under 200 ms: a run of them adds up, and
// fires once; running long between pauses starts a new run.
func TestStallAddsUpThrottling(t *testing.T) {
	s := userStalls(time.Second)
	var fired []*Trigger
	at := uint64(0)
	for range 12 { // 12 pauses of 100 ms, 10 ms apart
		at += 110 * ms
		if tr := s.finished(wait(at, 100*ms, 1, event.ReasonDirtyThrottle, 'D')); tr != nil {
			fired = append(fired, tr)
		}
	}
	if len(fired) != 1 || fired[0].At != 10*ms || !strings.Contains(fired[0].Detail, "dirty-throttled") {
		t.Fatalf("fired %+v, want one trigger from the first pause", fired)
	}
	s2 := userStalls(time.Second)
	at = 0
	for range 12 { // 100 ms pauses, 300 ms of running between: never a stall
		at += 400 * ms
		if tr := s2.finished(wait(at, 100*ms, 1, event.ReasonDirtyThrottle, 'D')); tr != nil {
			t.Fatalf("pauses far apart fired: %+v", tr)
		}
	}
}

// Kernel threads idle in TASK_IDLE look uninterruptible: never a stall.
func TestStallSkipsKernelThreads(t *testing.T) {
	s := newStalls(time.Second)
	s.isKernel = func(pid uint32) bool { return pid == 54 }
	if tr := s.inProgress(wait(5000*ms, 4000*ms, 54, event.ReasonOther, 'D')); tr != nil {
		t.Errorf("an idle kworker fired: %+v", tr)
	}
}

func sock(t, dur uint64, pid uint32, nr string, ret int64, ino uint64) *event.Syscall {
	return &event.Syscall{Header: event.Header{Time: t, PID: pid, TID: pid, Comm: "srv"}, Dur: dur, Ret: ret,
		Nr: nrOf(nr), File: event.FileRef{Dev: 8, Ino: ino, Kind: event.KindSocketInet}}
}

func nrOf(name string) uint32 {
	for nr, n := range event.SyscallNames() {
		if n[0] == name {
			return uint32(nr)
		}
	}
	panic("no syscall " + name)
}

// A request fires while it is unanswered past the threshold, once; a fast
// one never; a client's end (it wrote first) is not followed.
func TestServingFindsSlowRequests(t *testing.T) {
	s := newServing(uint64(time.Second))
	// A fast request: read, write 10 ms later.
	if s.call(sock(0, 5*ms, 1, "read", 100, 1)) != nil || s.call(sock(15*ms, ms, 1, "write", 10, 1)) != nil {
		t.Fatal("a fast request fired")
	}
	// A slow one, labelled by its first bytes.
	s.call(sock(100*ms, 2*ms, 1, "recvfrom", 100, 1))
	s.payload(&event.Payload{Header: event.Header{PID: 1}, Conn: event.FileRef{Dev: 8, Ino: 1}, Data: []byte("GET /slow?x=1 HTTP/1.1\r\n")})
	if got := s.slow(900 * ms); len(got) != 0 {
		t.Fatalf("fired before its time: %+v", got)
	}
	got := s.slow(1500 * ms)
	if len(got) != 1 || got[0].At != 102*ms || !strings.HasPrefix(got[0].Detail, "GET /slow") {
		t.Fatalf("slow requests at 1.5 s: %+v", got)
	}
	if again := s.slow(1600 * ms); len(again) != 0 {
		t.Errorf("fired twice: %+v", again)
	}
	if tr := s.call(sock(2000*ms, ms, 1, "write", 10, 1)); tr != nil {
		t.Errorf("its answer fired again: %+v", tr)
	}
	// An answer the poll missed fires at the answer.
	s.call(sock(3000*ms, ms, 1, "read", 100, 1))
	if tr := s.call(sock(4500*ms, ms, 1, "sendmsg", 10, 1)); tr == nil || !strings.Contains(tr.Detail, "answered after") {
		t.Errorf("a slow answered request: %+v", tr)
	}
	// First bytes told before their read's call: still its label.
	s.payload(&event.Payload{Header: event.Header{PID: 1}, Conn: event.FileRef{Dev: 8, Ino: 3}, Data: []byte("POST /early HTTP/1.1\r\n")})
	s.call(sock(6000*ms, ms, 1, "read", 100, 3))
	if got := s.slow(7500 * ms); len(got) != 1 || !strings.HasPrefix(got[0].Detail, "POST /early") {
		t.Errorf("a request labelled before its read: %+v", got)
	}
	// A client: wrote first, then waits 5 s for its answer.
	s.call(sock(0, ms, 2, "write", 10, 2))
	s.call(sock(5000*ms, ms, 2, "read", 10, 2))
	if got := s.slow(9000 * ms); len(got) != 0 {
		t.Errorf("a client's end fired: %+v", got)
	}
}

func TestParsePSIRule(t *testing.T) {
	r, err := ParsePSIRule("io:full>20%/5s")
	if err != nil || r.Resource != "io" || !r.Full || r.Share != 0.2 || r.Over != 5*time.Second || r.Kind() != "psi-io" {
		t.Fatalf("io:full>20%%/5s: %+v %v", r, err)
	}
	for _, bad := range []string{"", "io", "disk:some>1%/1s", "io:most>1%/1s", "io:some>0%/1s", "io:some>120%/1s",
		"io:some>5/1s", "io:some>5%/10ms", "cpu:full>5%/5s", "io:some>5%/"} {
		if _, err := ParsePSIRule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Rotation keeps the newest incidents, whole, within count and bytes, and
// touches nothing else in the directory.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	names := []string{"20261124T100000Z-stall", "20261124T110000Z-snapshot", "20261124T120000Z-psi-io"}
	for _, n := range names {
		for _, ext := range []string{".db", ".txt", ".html"} {
			os.WriteFile(filepath.Join(dir, n+ext), make([]byte, 1000), 0o600)
		}
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600)
	os.WriteFile(filepath.Join(dir, ".watch.pid"), nil, 0o600)
	rotate(dir, 2, 0)
	if _, err := os.Stat(filepath.Join(dir, names[0]+".db")); !os.IsNotExist(err) {
		t.Error("the oldest incident is still there")
	}
	rotate(dir, 0, 3500) // room for one incident of 3000 bytes
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{".watch.pid", "20261124T120000Z-psi-io.db", "20261124T120000Z-psi-io.html", "20261124T120000Z-psi-io.txt", "notes.txt"}
	var got []string
	for _, p := range left {
		got = append(got, filepath.Base(p))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("left %v, want %v", got, want)
	}
}

func TestLostHistorySince(t *testing.T) {
	var l lostHistory
	l.add(1*ms, map[string]uint64{"events": 5})
	l.add(2*ms, map[string]uint64{"events": 5})
	l.add(3*ms, map[string]uint64{"events": 12, "stacks": 1})
	got := l.since(2 * ms)
	if got["events"] != 7 || got["stacks"] != 1 {
		t.Errorf("lost since 2 ms: %v, want 7 events and 1 stack", got)
	}
}

// A kernel thread's wait, known as one while it was seen in progress, does
// not fire when it ends, even long after and with the thread gone (an idle
// kworker woken to exit after 5 minutes fired once).
func TestStallRemembersKernelThreads(t *testing.T) {
	s := newStalls(time.Second)
	alive := true
	s.isKernel = func(pid uint32) bool { return alive && pid == 54 }
	start := uint64(1000 * ms)
	for now := start + 2000*ms; now < start+300_000*ms; now += 1000 * ms {
		if tr := s.inProgress(wait(now, now-start, 54, event.ReasonOther, 'D')); tr != nil {
			t.Fatalf("in progress: %+v", tr)
		}
		s.forget(now - 33_000*ms)
	}
	alive = false // gone: /proc no longer says
	if tr := s.finished(wait(start+301_000*ms, 301_000*ms, 54, event.ReasonOther, 'D')); tr != nil {
		t.Errorf("the kworker's wait fired as it ended: %+v", tr)
	}
}

// TestServingFramesByProtocol: a PostgreSQL connection's start-up is no
// request, told before its read's call or after; its first query is,
// labelled by statement and table.
func TestServingFramesByProtocol(t *testing.T) {
	s := newServing(uint64(time.Second))
	pg := func(ino uint64, data string) {
		s.payload(&event.Payload{Header: event.Header{PID: 1}, Conn: event.FileRef{Dev: 8, Ino: ino}, Data: []byte(data)})
	}
	startup := "\x00\x00\x00\x1b\x00\x03\x00\x00user\x00u\x00database\x00d\x00\x00"
	// The start-up's bytes before its read, then after it on another connection.
	pg(4, startup)
	s.call(sock(0, ms, 1, "recvfrom", int64(len(startup)), 4))
	s.call(sock(10*ms, ms, 1, "read", int64(len(startup)), 5))
	pg(5, startup)
	if got := s.slow(5000 * ms); len(got) != 0 {
		t.Fatalf("a start-up left open fired: %+v", got)
	}
	s.call(sock(6000*ms, ms, 1, "sendto", 10, 4))
	q := "Q\x00\x00\x00\x1eSELECT * FROM t WHERE a=1\x00"
	pg(4, q)
	s.call(sock(7000*ms, ms, 1, "recvfrom", int64(len(q)), 4))
	if got := s.slow(9000 * ms); len(got) != 1 || !strings.HasPrefix(got[0].Detail, "postgres SELECT t,") {
		t.Errorf("the query at 9 s: %+v", triggers(got))
	}
}

func triggers(ts []*Trigger) []Trigger {
	var out []Trigger
	for _, t := range ts {
		out = append(out, *t)
	}
	return out
}
