package scenarios

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// These run the scenarios under whyslow and check its diagnosis against the
// truth each scenario was built to show (issue 5).

type explanation struct {
	Schema string `json:"schema"`
	Target struct {
		PID      uint32   `json:"pid"`
		Command  string   `json:"command"`
		PIDs     []uint32 `json:"pids"`
		ExitCode *int     `json:"exit_code"`
	} `json:"target"`
	Time struct {
		OffCPUS    map[string]float64 `json:"off_cpu_s"`
		KernelCPUS map[string]float64 `json:"kernel_cpu_s"`
	} `json:"time"`
	WallS    float64 `json:"wall_s"`
	Coverage struct {
		WallS        float64 `json:"wall_s"`
		PathS        float64 `json:"path_s"`
		UnaccountedS float64 `json:"unaccounted_s"`
		Threads      []struct {
			TID          uint32  `json:"tid"`
			Comm         string  `json:"comm"`
			PathCPUS     float64 `json:"path_cpu_s"`
			OnCPUS       float64 `json:"on_cpu_s"`
			UnaccountedS float64 `json:"unaccounted_s"`
		} `json:"threads"`
	} `json:"coverage"`
	Verdict struct {
		Basis   string  `json:"basis"`
		Reason  string  `json:"reason"`
		Kind    string  `json:"kind"`
		Share   float64 `json:"share"`
		Summary string  `json:"summary"`
		Ranked  []struct {
			Reason string  `json:"reason"`
			S      float64 `json:"s"`
		} `json:"ranked"`
	} `json:"verdict"`
	Critical struct {
		ByReason map[string]float64 `json:"by_reason"`
		Segments []struct {
			TID    uint32  `json:"tid"`
			Reason string  `json:"reason"`
			BeginS float64 `json:"begin_s"`
			DurS   float64 `json:"dur_s"`
		} `json:"segments"`
		Chain []struct {
			WaiterTID  uint32 `json:"waiter_tid"`
			Reason     string `json:"reason"`
			WorkerComm string `json:"worker_comm"`
			WorkerPID  uint32 `json:"worker_pid"`
			WorkerRole string `json:"worker_role"`
		} `json:"chain"`
	} `json:"critical_path"`
	Threads []struct {
		PID        uint32             `json:"pid"`
		TID        uint32             `json:"tid"`
		Comm       string             `json:"comm"`
		WriteBytes uint64             `json:"write_bytes"`
		ByReason   map[string]float64 `json:"by_reason"`
		OnCPUS     float64            `json:"on_cpu_s"`
	} `json:"threads"`
	FileGroups []struct {
		Pattern string `json:"pattern"`
		Files   int    `json:"files"`
		Created int    `json:"created"`
		Deleted int    `json:"deleted"`
	} `json:"file_groups"`
	Files []struct {
		Path       string  `json:"path"`
		ReadBytes  uint64  `json:"read_bytes"`
		WriteBytes uint64  `json:"write_bytes"`
		WaitS      float64 `json:"wait_s"`
	} `json:"files"`
	Devices []struct {
		Name             string  `json:"name"`
		Requests         uint64  `json:"requests"`
		DiscardBytes     uint64  `json:"discard_bytes"`
		AwaitMS          float64 `json:"await_ms"`
		ThrottleWriteBPS uint64  `json:"throttle_write_bps"`
		ThrottledS       float64 `json:"throttled_s"`
	} `json:"devices"`
	Network []struct {
		Peer       string `json:"peer"`
		BytesIn    uint64 `json:"bytes_in"`
		BytesOut   uint64 `json:"bytes_out"`
		BytesKnown bool   `json:"bytes_known"`
	} `json:"network"`
	AfterExit struct {
		DirtyAtExit  uint64 `json:"dirty_at_exit_bytes"`
		WrittenBytes uint64 `json:"written_bytes"`
	} `json:"after_exit"`
	Blame []struct {
		PID      uint32  `json:"pid"`
		Comm     string  `json:"comm"`
		Activity string  `json:"activity"`
		Share    float64 `json:"share"`
		Summary  string  `json:"summary"`
		Path     string  `json:"path"`
		Object   string  `json:"object"`
	} `json:"blame"`
	BlameOmitted int    `json:"blame_omitted"`
	LostEvents   uint64 `json:"lost_events"`
}

func underWhyslow(t *testing.T, dir string, args ...string) (*explanation, string, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "explain.json")
	out, errs := scenario(t, []string{"WHYSLOW=1", "WHYSLOW_JSON=" + js}, dir, args...)
	return readExplanation(t, js, errs), out, errs
}

func readExplanation(t *testing.T, path, log string) *explanation {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no JSON from whyslow: %v\n%s", err, log)
	}
	var x explanation
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	if x.Schema != "whyslow.run/v1" {
		t.Fatalf("schema %q", x.Schema)
	}
	checkCoverage(t, &x, log)
	return &x
}

// checkCoverage holds every explanation to the invariant (issue 49): the
// critical path adds up to the wall time within 1%, and no more than 1% of
// it is CPU its threads were not measured using (a wait the recording
// lost).
func checkCoverage(t *testing.T, x *explanation, log string) {
	t.Helper()
	c := x.Coverage
	tol := 0.01 * x.WallS
	if math.Abs(c.WallS-x.WallS) > 1e-9 || math.Abs(c.PathS-x.WallS) > tol || c.UnaccountedS > tol {
		var cpu []string
		for _, s := range x.Critical.Segments {
			if len(c.Threads) > 0 && s.TID == c.Threads[0].TID && s.Reason == "cpu" && s.DurS > 0.005 {
				cpu = append(cpu, fmt.Sprintf("%.3f+%.3f", s.BeginS, s.DurS))
			}
		}
		t.Errorf("the answer does not cover the wall time %.3f s: path %.3f s, unaccounted %.3f s %+v (its cpu on the path, s: %v)\n%s",
			x.WallS, c.PathS, c.UnaccountedS, c.Threads, cpu, log)
	}
}

func isDiskWrite(reason string) bool { return reason == "disk-write" || reason == "dirty-throttle" }

func TestVerdictWordPop(t *testing.T) {
	dir := t.TempDir()
	js, popular := filepath.Join(dir, "popularity.json"), filepath.Join(dir, "popular.json")
	_, errs := scenario(t, []string{"WHYSLOW=1", "WHYSLOW_JSON=" + js, "WHYSLOW_JSON_POPULAR=" + popular}, "word-pop")
	x := readExplanation(t, js, errs)
	if !isDiskWrite(x.Verdict.Reason) {
		t.Errorf("/popularity verdict %q (%s), want disk-write or dirty-throttle", x.Verdict.Reason, x.Verdict.Summary)
	}
	var group bool
	for _, g := range x.FileGroups {
		if strings.HasSuffix(g.Pattern, "/*/*.txt") && g.Files == 1000 && g.Created == 1000 && g.Deleted == 1000 {
			group = true
		}
	}
	if !group {
		t.Errorf("no group of 1000 created and deleted files under <scratch>/<uuid>/: %+v", x.FileGroups)
	}
	var writer *struct{ pid, tid uint32 }
	var most uint64
	for _, th := range x.Threads {
		if th.WriteBytes > most {
			most, writer = th.WriteBytes, &struct{ pid, tid uint32 }{th.PID, th.TID}
		}
	}
	if writer == nil || writer.tid == writer.pid || most < 1000*4096 {
		t.Errorf("the writer must be a request thread, not the main thread: %+v (%d bytes)", writer, most)
	}
	if !strings.Contains(x.Verdict.Summary, "thread") {
		t.Errorf("summary does not name the thread: %s", x.Verdict.Summary)
	}
	p := readExplanation(t, popular, errs)
	if isDiskWrite(p.Verdict.Reason) || p.Verdict.Reason == "disk-read" || p.Verdict.Reason == "sync" {
		t.Errorf("/popular verdict %q: it does no disk I/O", p.Verdict.Reason)
	}
	for _, line := range strings.Split(errs, "\n") {
		if utf8.RuneCountInString(line) > 80 {
			t.Errorf("line over 80 columns: %q", line)
		}
	}
}

func TestVerdictMysteryNetwork(t *testing.T) {
	waitsOnly(t)
	x, _, _ := underWhyslow(t, "mystery", "network")
	if x.Verdict.Reason != "network" {
		t.Fatalf("verdict %q (%s), want network", x.Verdict.Reason, x.Verdict.Summary)
	}
	if len(x.Network) == 0 || !strings.HasPrefix(x.Network[0].Peer, "127.0.0.1:") || !strings.Contains(x.Verdict.Summary, x.Network[0].Peer) {
		t.Errorf("the peer is not named: %+v / %s", x.Network, x.Verdict.Summary)
	}
	// The default level hooks no socket call: the bytes are the connection's
	// totals as the kernel counted them ("question\n" out, the answer in).
	if n := x.Network; len(n) == 0 || !n[0].BytesKnown || n[0].BytesOut != 9 || n[0].BytesIn != uint64(len("the answer is 42\n")) ||
		!strings.Contains(x.Verdict.Summary, "17 B in, 9 B out") {
		t.Errorf("the connection's bytes: %+v / %s; want 17 B in, 9 B out", x.Network, x.Verdict.Summary)
	}
}

func TestVerdictMysteryCPU(t *testing.T) {
	x, _, _ := underWhyslow(t, "mystery", "cpu")
	if x.Verdict.Reason != "cpu" || x.Verdict.Share < 0.8 {
		t.Fatalf("verdict %q %.2f (%s), want cpu", x.Verdict.Reason, x.Verdict.Share, x.Verdict.Summary)
	}
}

func TestVerdictMysterySecondWrite(t *testing.T) {
	x, _, errs := underWhyslow(t, "mystery", "writes")
	if !isDiskWrite(x.Verdict.Reason) {
		t.Fatalf("verdict %q (%s), want dirty-throttle or disk-write", x.Verdict.Reason, x.Verdict.Summary)
	}
	var blamed bool
	for _, b := range x.Blame {
		blamed = blamed || (b.Activity == "writeback" && strings.Contains(b.Summary, "/out1"))
	}
	if !blamed {
		t.Errorf("the first run's data (out1) is not blamed: %+v", x.Blame)
	}
	if x.AfterExit.WrittenBytes == 0 {
		t.Errorf("no writes reported after exit: %+v\n%s", x.AfterExit, errs)
	}
}

func TestVerdictMysteryFsync(t *testing.T) {
	x, _, _ := underWhyslow(t, "mystery", "fsync")
	if x.Verdict.Reason != "sync" {
		t.Fatalf("verdict %q (%s), want sync", x.Verdict.Reason, x.Verdict.Summary)
	}
}

func TestVerdictIozoneWriters(t *testing.T) {
	x, _, _ := underWhyslow(t, "iozone-writers")
	writers := 0
	for _, th := range x.Threads {
		if th.WriteBytes < 16<<20 {
			continue
		}
		writers++
		disk := th.ByReason["disk-write"] + th.ByReason["dirty-throttle"] + th.ByReason["sync"]
		for r, v := range th.ByReason {
			if v > disk && r != "disk-write" && r != "dirty-throttle" && r != "sync" {
				t.Errorf("writer %d mostly %s (%.2fs), not writing to disk (%.2fs)", th.TID, r, v, disk)
			}
		}
	}
	if writers != 4 {
		t.Errorf("%d writers of 16 MiB found, want 4", writers)
	}
	// Each writer ends in an fsync of what it still has dirty. How the
	// wall time splits between the throttled writes and those fsyncs
	// depends on when the writers get a CPU: with both cores busy, a writer
	// that finished writing early waits in fsync behind the others'
	// writeback, and the fsyncs outweigh the throttling (seen in 2 full runs
	// of ~20 on a saturated machine). Either is the disk writing their data.
	if r := x.Verdict.Reason; !isDiskWrite(r) && r != "sync" {
		t.Errorf("verdict %q", r)
	}
}

func TestVerdictSessionStallBlamesSync(t *testing.T) {
	x, _, _ := underWhyslow(t, "session-stall")
	var sync bool
	for _, b := range x.Blame {
		sync = sync || (b.Comm == "sync" && b.Activity == "sync")
	}
	if !sync {
		t.Fatalf("blame does not name sync: %+v", x.Blame)
	}
}

func TestRunCommandNotFound(t *testing.T) {
	requireRoot(t)
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "run", "--", "no-such-command-whyslow")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 127 {
		t.Fatalf("exit %v, want 127", err)
	}
	if got := strings.TrimSpace(string(out)); got != "whyslow: no-such-command-whyslow: command not found" {
		t.Errorf("message %q", got)
	}
}

func TestRunWithoutPrivileges(t *testing.T) {
	requireRoot(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatal("setpriv (util-linux) is needed to drop privileges")
	}
	// eBPF asked for: one line saying what is missing, exit 4.
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		filepath.Join(bin, "whyslow"), "run", "--sampler", "bpf", "--", "true")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 4 {
		t.Fatalf("exit %v (%s), want 4", err, out)
	}
	if !strings.Contains(string(out), "CAP_BPF") || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Errorf("want one line saying what is missing, got %q", out)
	}
	// Left to choose (issue 51): /proc sampled instead, said in the first line.
	cmd = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
		filepath.Join(bin, "whyslow"), "run", "--", "true")
	out, err = cmd.CombinedOutput()
	if first, _, _ := strings.Cut(string(out), "\n"); err != nil || !strings.Contains(first, "sampling /proc") || !strings.Contains(first, "CAP_BPF") {
		t.Errorf("run without privileges: %v, %q; want the sampled capture, said with why in its first line", err, out)
	}
}
