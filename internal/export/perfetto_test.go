package export

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/store/storetest/hostile"
)

// perfettoProtos fails in CI, and skips elsewhere, when Perfetto's Python
// protos (PyPI perfetto, scripts/deps.sh) are missing.
func perfettoProtos(t *testing.T) {
	t.Helper()
	if exec.Command("python3", "-c", "from perfetto.protos.perfetto.trace import perfetto_trace_pb2").Run() == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("Perfetto's protos are missing (python3 -m pip install perfetto; make deps)")
	}
	t.Skip("Perfetto's protos are missing (make deps)")
}

type parsedTrace struct {
	Threads map[string]struct {
		PID  uint32
		Name string
	}
	Processes map[string]struct {
		Name    string
		Cmdline []string
	}
	Slices   map[string]map[string]uint64
	Instants map[string][]string
	Args     map[string][]any
	Counters map[string]float64
	Flows    int
	Clock    [][2]uint64
	Packets  int
	Errors   []string
}

func TestPerfettoParsesWithPerfettosProtos(t *testing.T) {
	perfettoProtos(t)
	_, src := fixture(t)
	path := filepath.Join(t.TempDir(), "trace.pftrace")
	var b bytes.Buffer
	if err := Perfetto(&b, src); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "testdata/perfetto_check.py", path).Output()
	if err != nil {
		t.Fatalf("parsing with Perfetto's protos: %v\n%s", err, out)
	}
	var tr parsedTrace
	if err := json.Unmarshal(out, &tr); err != nil {
		t.Fatal(err)
	}
	if len(tr.Errors) > 0 {
		t.Fatalf("the trace is not well formed: %v", tr.Errors)
	}
	main, worker := strconv.Itoa(int(hostile.PID)), strconv.Itoa(int(hostile.WorkerTID))
	if got := tr.Threads[worker]; got.Name != hostile.WorkerComm || got.PID != hostile.PID {
		t.Errorf("worker thread track: %+v", got)
	}
	if got := tr.Processes[main]; got.Name != "server" || len(got.Cmdline) != 3 {
		t.Errorf("process track: %+v", got)
	}
	ms := uint64(1_000_000)
	for _, c := range []struct {
		track, slice string
		want         uint64
	}{
		{worker, "disk-write", hostile.DiskWriteNS - ms/2}, // its run-queue tail is apart
		{worker, "runqueue", ms / 2},
		{worker, "dirty-throttle", hostile.ThrottleNS},
		{main, "sleep", hostile.SleepNS},
		{main, "lock", 500*ms - ms},
		{main, "runqueue", ms + 20*ms},
		{"syscalls:" + worker, "write", 480 * ms},
	} {
		if got := tr.Slices[c.track][c.slice]; got != c.want {
			t.Errorf("track %s: %s slices last %d ns, want %d (all: %v)", c.track, c.slice, got, c.want, tr.Slices[c.track])
		}
	}
	if tr.Slices[main]["on-cpu"] == 0 {
		t.Errorf("no on-CPU slices on the main thread: %v", tr.Slices[main])
	}
	// The worker woke the main thread: an instant with a flow to its wait's end.
	if tr.Flows != 1 || len(tr.Instants[worker]) != 1 || tr.Instants[worker][0] != "wakes server (100)" {
		t.Errorf("wake-ups: %d flows, instants %v", tr.Flows, tr.Instants)
	}
	if got := tr.Args["syscalls:"+worker+":write:file"]; len(got) != 1 || got[0] != hostile.FilePath {
		t.Errorf("write's file arg: %v", got)
	}
	if got := tr.Args["syscalls:"+main+":read:peer"]; len(got) != 1 || got[0] != "127.0.0.1:40000" {
		t.Errorf("read's peer arg: %v", got)
	}
	// Counters integrate back to what was recorded.
	for name, want := range map[string]float64{"dev 7:250 write": 1 << 20, "dev 7:250 read": 4096, "pages dirtied": 256, "pages written back": 128} {
		if got := tr.Counters[name]; math.Abs(got-want) > want/100 {
			t.Errorf("counter %q integrates to %.1f, want %.0f (all: %v)", name, got, want, tr.Counters)
		}
	}
	if len(tr.Clock) != 2 || tr.Clock[0] != [2]uint64{3, hostile.Start} {
		t.Errorf("clock snapshot %v: want MONOTONIC at the start and REALTIME", tr.Clock)
	}
}
