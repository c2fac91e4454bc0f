package analysis

import (
	"strconv"
	"testing"
	"time"
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
	g := groupFiles(files)
	if len(g) != 1 || g[0].Files != 1000 || g[0].Created != 1000 || g[0].Deleted != 1000 || g[0].WriteBytes != 10000 {
		t.Fatalf("groups: %+v", g)
	}
}

func TestParseTime(t *testing.T) {
	start := time.Date(2026, 11, 22, 3, 10, 0, 0, time.UTC)
	c := Clock{OffsetNS: start.UnixNano() - 1_000_000_000, StartMono: 1_000_000_000}
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"+2.5s", 3_500_000_000},
		{"03:10:01.5", 2_500_000_000},
		{"2026-11-22 03:10:03", 4_000_000_000},
	} {
		got, err := c.ParseTime(tc.in, true)
		if err != nil || got != tc.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"25:99", "+forever", "yesterday", ""} {
		if _, err := c.ParseTime(bad, true); err == nil {
			t.Errorf("ParseTime(%q) should fail", bad)
		}
	}
	if _, _, err := c.ParseRange("[+2s,+1s]", true); err == nil {
		t.Error("a range that ends before it begins must fail")
	}
}

// Filters bind values as parameters: a hostile name is data, not SQL.
func TestFilterBindsValues(t *testing.T) {
	f := NoFilter()
	f.Comms = []string{"x'); DROP TABLE syscalls; --"}
	f.FileGlob = "/tmp/*' OR 1=1 --"
	where, args := f.where(ioCols)
	if want := "comm IN (?) AND path GLOB ?"; where != want {
		t.Fatalf("where %q, want %q", where, want)
	}
	if len(args) != 2 || args[0] != f.Comms[0] || args[1] != f.FileGlob {
		t.Errorf("args %v", args)
	}
	raw, rargs := f.where(rawCols)
	if raw != "comm_id IN (SELECT comm_id FROM comms WHERE comm IN (?)) AND (dev, ino, gen) IN (SELECT dev, ino, gen FROM file_names WHERE path GLOB ?)" || len(rargs) != 2 {
		t.Errorf("raw where %q %v", raw, rargs)
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
