package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// reportJSON runs `whyslow report args... --json` on a story and decodes it into v.
func reportJSON(t *testing.T, story string, v any, args ...string) {
	t.Helper()
	for _, s := range storetest.Stories {
		if s.Name != story {
			continue
		}
		rec := s.Record(t)
		out, err := runReport(t, rec, append(append(args, rec), "--json")...)
		if err != nil {
			t.Fatalf("report %v: %v", args, err)
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("decoding %v: %v\n%s", args, err, out)
		}
		return
	}
	t.Fatalf("no story %q", story)
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-3*math.Max(1, math.Abs(want)) }

// The golden files hold everything; these are the facts each story is
// about, stated so that a failure says what went wrong in words.

func TestSecondRunFacts(t *testing.T) {
	var x explain.Explanation
	reportJSON(t, "second-run", &x, "explain")
	if x.Verdict.Reason != "dirty-throttle" || !near(x.Path.ByReason["dirty-throttle"], 27*0.18) {
		t.Errorf("verdict %s, dirty-throttle on the path %.3f s; want dirty-throttle, 4.86 s", x.Verdict.Reason, x.Path.ByReason["dirty-throttle"])
	}
	if len(x.Blame) < 3 {
		t.Fatalf("blame: %+v", x.Blame)
	}
	// 40 MiB of out1 of the 58 MiB of data the disk wrote during the waits
	// (the journal is no one's).
	if b := x.Blame[0]; b.Activity != "writeback" || !strings.Contains(b.Summary, "/mnt/slow/out1") || !near(b.Share, 40.0/58) {
		t.Errorf("first blame %+v; want the writeback of /mnt/slow/out1, 69%%", b)
	}
	if b := x.Blame[1]; b.Activity != "dirtied" || b.PID != 1100 || !near(b.Share, 10.0/58) {
		t.Errorf("second blame %+v; want cp (pid 1100) dirtied, 17%%", b)
	}
	if b := x.Blame[2]; b.Activity != "sync" || b.PID != 1200 {
		t.Errorf("third blame %+v; want sync (pid 1200)", b)
	}
	if x.AfterExit.WrittenBytes != 16<<20 {
		t.Errorf("written after exit %d, want 16 MiB", x.AfterExit.WrittenBytes)
	}

	var st struct{ Result reports.Stats }
	reportJSON(t, "second-run", &st, "stats")
	for _, c := range st.Result.Syscalls {
		// 27 streamed writes of 190 ms and 21 counted in the kernel: the
		// median is one of the slow ones (it was 0 when the aggregates'
		// histogram query failed on a second connection).
		if c.Class == "write" && (c.Count != 48 || !c.Approximate || c.P50NS < 100e6) {
			t.Errorf("write stats %+v; want 48 calls, approximate, p50 ~190 ms", c)
		}
	}
}

func TestLockHeldFacts(t *testing.T) {
	var x explain.Explanation
	reportJSON(t, "lock-held", &x, "explain")
	if x.Verdict.Reason != "lock" || !strings.Contains(x.Verdict.Summary, "held up by flock (pid 1990)") {
		t.Errorf("verdict %s: %s; want lock, held up by flock (pid 1990)", x.Verdict.Reason, x.Verdict.Summary)
	}
	c := x.Path.Chain
	if len(c) != 1 || c[0].WaiterTID != 2000 || c[0].WorkerTID != 2001 || c[0].Reason != "child" {
		t.Errorf("chain %+v; want sh (2000) waiting for its child flock (2001)", c)
	}
	if len(x.Blame) == 0 || x.Blame[0].PID != 1990 || x.Blame[0].Activity != "lock" {
		t.Errorf("blame %+v; want the holder, pid 1990", x.Blame)
	}
}

func TestCPUBoundFacts(t *testing.T) {
	var x explain.Explanation
	reportJSON(t, "cpu-bound", &x, "explain")
	if x.Verdict.Reason != "cpu" || len(x.Threads) == 0 || x.Threads[0].TID != 3001 || !near(x.Threads[0].OnCPUS, 1.88) {
		t.Errorf("verdict %s, threads %+v; want cpu, the worker 3001 first with 1.88 s", x.Verdict.Reason, x.Threads)
	}
	if len(x.FileGroups) != 1 || x.FileGroups[0].Pattern != "/tmp/*/*.part" || x.FileGroups[0].Created != 4 || x.FileGroups[0].Deleted != 4 {
		t.Errorf("file groups %+v; want /tmp/*/*.part, 4 created and deleted", x.FileGroups)
	}
	if !near(x.Path.ByReason["runqueue"], 0.08+0.3e-3) {
		t.Errorf("runqueue on the path %.4f s, want 80.3 ms", x.Path.ByReason["runqueue"])
	}
}

func TestSlowRequestFacts(t *testing.T) {
	var r requests.Requests
	reportJSON(t, "slow-request", &r, "requests")
	if r.Count != 6 || len(r.Requests) != 6 || r.LostEvents != 2 {
		t.Fatalf("%d requests (%d listed), %d lost; want 6, 6, 2", r.Count, len(r.Requests), r.LostEvents)
	}
	slow := r.Requests[0]
	if slow.Label != "POST /vote/linux" || slow.Verdict.Reason != "sync" || !near(slow.DurationS, 0.682) {
		t.Errorf("slowest %s %s %.3f s; want POST /vote/linux, sync, 682 ms", slow.Label, slow.Verdict.Reason, slow.DurationS)
	}
	who := map[uint32]string{}
	for _, b := range slow.Blame {
		who[b.PID] = string(b.Activity)
	}
	if who[4100] != "sync" || who[4200] != "dirtied" {
		t.Errorf("blame %+v; want sync (4100) and tar (4200) dirtied", slow.Blame)
	}
	if r.Requests[1].Label != "GET /popular/linux" || r.Requests[3].Label != "GET /popularity/linux" {
		t.Errorf("labels %q, %q; query strings must be dropped", r.Requests[1].Label, r.Requests[3].Label)
	}

	var u struct{ Result reports.Usage }
	reportJSON(t, "slow-request", &u, "usage")
	if n := u.Result.Network; len(n) == 0 || n[0].Interface != "eth0" || n[0].Sent != 6*2048 {
		t.Errorf("network %+v; want eth0 first with 12 KiB sent", n)
	}
}

// A recording made without --requests says what to do instead.
func TestRequestsNeedsSocketCalls(t *testing.T) {
	rec := storetest.Stories[0].Record(t)
	out, err := runReport(t, rec, "requests", rec)
	if err == nil || !strings.Contains(err.Error(), "record with --requests") || codeOf(err) != ExitUsage {
		t.Errorf("requests on a default recording: %v (exit %d); want a usage error naming --requests", err, codeOf(err))
	}
	// The error comes alone: no header of a result that never came.
	if strings.Contains(out, "Timerange") {
		t.Errorf("output before the error: %q", out)
	}
}

// The default level hooks no syscall: the kernel's share of the CPU time
// comes from timer samples (open 2 samples, write 1, unlink 1 of 5 per file,
// 1.335 s on CPU), files from the pages dirtied and the end-of-recording check,
// and the fsync from the waits seen at the switch.
func TestTempFilesFacts(t *testing.T) {
	var x explain.Explanation
	reportJSON(t, "temp-files", &x, "explain")
	if x.Verdict.Reason != "cpu" || !strings.Contains(x.Verdict.Summary, "in the kernel") ||
		!strings.Contains(x.Verdict.Summary, "300 files /tmp/*/*.txt created, written, deleted") {
		t.Errorf("verdict %s: %q; want CPU in the kernel on 300 temp files created, written, deleted", x.Verdict.Reason, x.Verdict.Summary)
	}
	for class, want := range map[string]float64{"open": 0.534, "write": 0.267, "unlink": 0.267} {
		if !near(x.Time.KernelCPUS[class], want) {
			t.Errorf("kernel CPU in %s: %.3f s, want %.2f (samples × CPU per sample)", class, x.Time.KernelCPUS[class], want)
		}
	}
	if len(x.FileGroups) == 0 || x.FileGroups[0].Created != 300 || x.FileGroups[0].Deleted != 300 || x.FileGroups[0].WriteBytes != 300*4096 {
		t.Errorf("file groups %+v; want 300 created, 300 deleted, 1.2 MiB written (pages dirtied)", x.FileGroups)
	}
	var journal bool
	for _, f := range x.Files {
		if f.Path == "/var/lib/app/journal.log" {
			journal = f.WriteBytes == 48*4096 && f.Ops == 3
		}
	}
	if !journal {
		t.Errorf("the journal's 48 pages dirtied and 3 waits in fsync are not in the files: %+v", x.Files[:min(3, len(x.Files))])
	}
}

// report log's machine formats: CSV (a header row, then a row per op) and
// JSON lines hold the same operations as --json, in the same order, with no
// header or note around them.
func TestLogFormats(t *testing.T) {
	var doc struct {
		Result []reports.Op `json:"result"`
	}
	reportJSON(t, "second-run", &doc, "log")
	if len(doc.Result) == 0 {
		t.Fatal("no operations in the story's log")
	}
	var rec string
	for _, s := range storetest.Stories {
		if s.Name == "second-run" {
			rec = s.Record(t)
		}
	}
	csvOut, err := runReport(t, rec, "log", rec, "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(csvOut, "\n"), "\n")
	if lines[0] != "begin,begin_ns,duration_ns,class,syscall,size,ret,comm,pid,tid,fd,path" || len(lines) != len(doc.Result)+1 {
		t.Fatalf("CSV: %d lines, header %q; want a header and %d rows", len(lines), lines[0], len(doc.Result))
	}
	first := strings.Split(lines[1], ",")
	if first[1] != fmt.Sprint(doc.Result[0].Begin) || first[4] != doc.Result[0].Syscall {
		t.Errorf("CSV's first row %q, JSON's %+v", lines[1], doc.Result[0])
	}
	jsonOut, err := runReport(t, rec, "log", rec, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	jl := strings.Split(strings.TrimSuffix(jsonOut, "\n"), "\n")
	if len(jl) != len(doc.Result) {
		t.Fatalf("JSON lines: %d, want %d", len(jl), len(doc.Result))
	}
	for i, l := range jl {
		var o reports.Op
		if err := json.Unmarshal([]byte(l), &o); err != nil || o.Begin != doc.Result[i].Begin || o.Path != doc.Result[i].Path {
			t.Fatalf("JSON line %d: %v %q; want %+v", i, err, l, doc.Result[i])
		}
	}
	if _, err := runReport(t, rec, "log", rec, "--format", "xml"); codeOf(err) != ExitUsage {
		t.Errorf("--format xml: %v (exit %d), want a usage error", err, codeOf(err))
	}
}
