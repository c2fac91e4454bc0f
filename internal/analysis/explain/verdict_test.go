package explain

import "testing"

// The verdict picks its facts, raw: the thread with the most of the top
// reason, its file and bytes, and a large culprit; no words.
func TestVerdictPicksFacts(t *testing.T) {
	evil := "w\x1b[31m"
	x := &Explanation{WallS: 2, Target: TargetInfo{PID: 10},
		Path: CriticalPath{
			ByReason: map[string]float64{"disk-write": 1.6, "cpu": 0.4},
			Segments: []PathSegment{{PID: 10, TID: 11, Comm: evil, Reason: "disk-write", DurS: 1.6}, {PID: 10, TID: 10, Reason: "cpu", DurS: 0.4}},
		},
		Threads: []ThreadTime{{PID: 10, TID: 10, Comm: "app"}, {PID: 10, TID: 11, Comm: evil, WriteBytes: 8 << 20,
			TopFile: "/data/out.bin", TopFileWriteBytes: 4 << 20}},
		Blame: []Blame{{Comm: "whyslow", Activity: "whyslow", Share: 0.5}, {PID: 20, Comm: "cp", Activity: "dirtied", Share: 0.3}},
	}
	x.verdict()
	v := x.Verdict
	if v.Kind != VerdictTop || v.Reason != "disk-write" || v.Share != 0.8 || v.OfS != 2 {
		t.Fatalf("verdict %+v", v)
	}
	d := v.Detail
	if d == nil || d.Kind != DetailWrote || d.Who == nil || *d.Who != (Actor{Role: ActorThread, Comm: evil, PID: 10, TID: 11}) {
		t.Fatalf("detail %+v", d)
	}
	if d.Path != "/data/out.bin" || d.PathBytes != 4<<20 || d.Bytes != 8<<20 {
		t.Errorf("file %q %d of %d", d.Path, d.PathBytes, d.Bytes)
	}
	if d.Blame == nil || d.Blame.Comm != "cp" {
		t.Errorf("blame %+v: want cp's, not whyslow's own recording", d.Blame)
	}

	x.Path.ByReason = map[string]float64{"disk-write": 0.8, "cpu": 0.7, "sleep": 0.5}
	x.Verdict = Verdict{}
	x.verdict()
	if x.Verdict.Kind != VerdictMixed || x.Verdict.Detail != nil || x.Verdict.OfS != 2 {
		t.Errorf("mixed verdict %+v", x.Verdict)
	}
}
