package explain

import (
	"strconv"
	"testing"
)

func TestPathPattern(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/1f0e8ca6-e625-11f1-ad71-02fc00000001/17.txt": "/tmp/*/*.txt",
		"/var/lib/php5/sess_abc":                           "/var/lib/php5/sess_abc",
		"/data/2024/report.csv":                            "/data/*/report.csv",
		"/srv/cache/deadbeefcafe1234":                      "/srv/cache/*",
		"/home/user/notes":                                 "/home/user/notes",
	} {
		if got := pathPattern(in); got != want {
			t.Errorf("pathPattern(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGroupFiles(t *testing.T) {
	var files []FileUse
	for i := 0; i < 1000; i++ {
		files = append(files, FileUse{Path: "/tmp/1f0e8ca6-e625-11f1-ad71-02fc00000001/" + strconv.Itoa(i) + ".txt", WriteBytes: 10, ReadBytes: 10, Created: true, Deleted: true})
	}
	files = append(files, FileUse{Path: "/etc/passwd", ReadBytes: 5})
	g := GroupFiles(files)
	if len(g) != 1 || g[0].Files != 1000 || g[0].Created != 1000 || g[0].Deleted != 1000 || g[0].WriteBytes != 10000 {
		t.Fatalf("groups: %+v", g)
	}
}

// TestTrimBlame: blame under MinBlameShare (a checkpointer's 47 µs
// sync_file_range, 0.0%) is noise: left out, counted, the rest ranked.
func TestTrimBlame(t *testing.T) {
	x := &Explanation{Blame: []Blame{
		{Comm: "checkpointer", Activity: "sync", Share: 0.0001},
		{Comm: "sync", Activity: "sync", Share: 0.62},
		{Comm: "bgwriter", Activity: "dirtied", Share: 0.009},
		{Comm: "noisy", Activity: "dirtied", Share: 0.30},
	}}
	x.trimBlame()
	if len(x.Blame) != 2 || x.Blame[0].Comm != "sync" || x.Blame[1].Comm != "noisy" || x.BlameOmitted != 2 {
		t.Fatalf("blame %+v, omitted %d; want sync, noisy and 2 left out", x.Blame, x.BlameOmitted)
	}
}
