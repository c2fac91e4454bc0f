package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/event"
)

// Every reason of the vocabulary has words in the verdict, and no word is
// kept for a reason that does not exist.
func TestReasonWordsCoverVocabulary(t *testing.T) {
	for _, r := range event.Reasons {
		if reasonWords[string(r)] == "" {
			t.Errorf("reason %q has no words", r)
		}
	}
	if len(reasonWords) != len(event.Reasons) {
		t.Errorf("%d reasons worded, %d in the vocabulary", len(reasonWords), len(event.Reasons))
	}
	for _, r := range event.Reasons {
		if ReasonColors[string(r)] == "" {
			t.Errorf("reason %q has no colour", r)
		}
	}
	if len(ReasonColors) != len(event.Reasons) {
		t.Errorf("%d reasons coloured, %d in the vocabulary", len(ReasonColors), len(event.Reasons))
	}
}

func TestGroupSentence(t *testing.T) {
	g := explain.FileGroup{Pattern: "/tmp/*/*.txt", Files: 1000, Created: 1000, Deleted: 1000, ReadBytes: 10, WriteBytes: 10}
	if got, want := groupSentence(g), "/tmp/*/*.txt: 1000 files 1000 created, written, read, 1000 deleted"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Each shape of verdict, worded from its facts.
func TestVerdictSentences(t *testing.T) {
	main := &explain.Actor{Role: explain.ActorMainThread, Comm: "app", PID: 7, TID: 7}
	for _, c := range []struct {
		v    explain.Verdict
		want string
	}{
		{explain.Verdict{Kind: explain.VerdictNone, Reason: "unknown"}, "nothing was recorded for this process"},
		{explain.Verdict{Kind: explain.VerdictIdle, Reason: "idle", Share: 1, OfS: 3},
			"waited for work the whole 3.00 s (accept, poll with no data): nothing was slow"},
		{explain.Verdict{Kind: explain.VerdictMixed, Reason: "cpu", OfS: 2, Ranked: []explain.Ranked{
			{Reason: "idle", S: 5}, {Reason: "cpu", S: 0.8}, {Reason: "sleep", S: 0.6}, {Reason: "lock", S: 0.4}, {Reason: "ipc", S: 0.2}}},
			"no single reason dominates: cpu 40%, sleep 30%, lock 20%"},
		{explain.Verdict{Kind: explain.VerdictTop, Reason: "disk-write", Share: 0.83, OfS: 2.1, Detail: &explain.VerdictDetail{
			Kind: explain.DetailWrote, Who: main, Path: "/data/out.bin", PathBytes: 4 << 20, Bytes: 8 << 20}},
			"83% of 2.10 s waiting for disk writes: main thread app (tid 7) wrote 4.0 MiB to /data/out.bin (8.0 MiB written in all)"},
		{explain.Verdict{Kind: explain.VerdictTop, Reason: "lock", Share: 0.9, OfS: 1, Detail: &explain.VerdictDetail{
			Kind: explain.DetailWaited, Who: &explain.Actor{Role: explain.ActorProcessThread, Comm: "w", PID: 8, TID: 9},
			Object: "/run/x.lock", HeldUpBy: &explain.Actor{Role: explain.ActorOutside, Comm: "flock", PID: 12}}},
			"90% of 1.00 s waiting on locks: thread w (tid 9) of process 8 waited on /run/x.lock, held up by flock (pid 12)"},
		{explain.Verdict{Kind: explain.VerdictTop, Reason: "cpu", Share: 0.7, OfS: 10, Detail: &explain.VerdictDetail{
			Kind: explain.DetailSpread, Spread: &explain.Spread{Threads: 150, Commands: []explain.CommandTime{
				{Comm: "cc1", S: 6, Processes: 145}, {Comm: "ld", S: 1}}}}},
			"70% of 10.00 s on CPU: spread over 150 threads, in cc1 (6.00 s, 145 processes), ld (1.00 s)"},
		// No one file took most of the bytes: the directory they went under.
		{explain.Verdict{Kind: explain.VerdictTop, Reason: "dirty-throttle", Share: 0.94, OfS: 18, Detail: &explain.VerdictDetail{
			Kind: explain.DetailWrote, Who: main, Path: "/srv/doc/all.html", PathBytes: 8 << 20, Bytes: 145 << 20,
			Tree: &explain.FileTree{Dir: "/srv/doc", Files: 2412, WriteBytes: 145 << 20}}},
			"94% of 18.00 s throttled for dirtying pages faster than the disk writes them (balance_dirty_pages): main thread app (tid 7) wrote 145.0 MiB to 2412 files under /srv/doc (the most, 8.0 MiB, to /srv/doc/all.html)"},
		// A tree walk on a cold cache reads the filesystem's metadata, not file data.
		{explain.Verdict{Kind: explain.VerdictTop, Reason: "disk-read", Share: 0.66, OfS: 1.09, Detail: &explain.VerdictDetail{
			Kind: explain.DetailRead, Who: main, Bytes: 1 << 20, Path: "/usr/lib/libpcre2-8.so", PathBytes: 616 << 10,
			Metadata: &explain.MetadataRead{Bytes: 34 << 20, Calls: []explain.CallWaits{
				{Syscall: "getdents64", Waits: 4222, S: 0.2049}, {Syscall: "newfstatat", Waits: 143, S: 0.0218}}}}},
			"66% of 1.09 s waiting for disk reads: main thread app (tid 7) waited on the filesystem's metadata (directories, inodes), not file data: getdents64 (4222 waits, 204.9 ms), newfstatat (143 waits, 21.8 ms); 34.0 MiB of it read from disk"},
		// A CPU verdict says when the rest was mostly waiting for a CPU.
		{explain.Verdict{Kind: explain.VerdictTop, Reason: "cpu", Share: 0.53, OfS: 8, Ranked: []explain.Ranked{
			{Reason: "cpu", S: 4.24}, {Reason: "runqueue", S: 3.68}, {Reason: "sync", S: 0.08}}},
			"53% of 8.00 s on CPU; and 46% waiting for a CPU (runnable, not running): the CPUs were saturated"},
		{explain.Verdict{Kind: explain.VerdictTop, Reason: "cpu", Share: 0.9, OfS: 8, Ranked: []explain.Ranked{
			{Reason: "cpu", S: 7.2}, {Reason: "runqueue", S: 0.8}}},
			"90% of 8.00 s on CPU"},
	} {
		if got := verdictSentence(c.v); got != c.want {
			t.Errorf("%s verdict:\n got %q\nwant %q", c.v.Kind, got, c.want)
		}
	}
}

// Names and paths are made safe once, wherever they sit in a sentence: a
// request's bulk files reached the terminal raw when analysis wrote the
// sentence (the group's summary was never escaped on that road).
func TestSentencesAreSafe(t *testing.T) {
	evil := "/tmp/\x1b[2J/1.txt"
	r := &requests.Requests{Count: 1, Requests: []requests.Entry{{Label: "GET /", Verdict: requests.Verdict{
		Kind: explain.VerdictTop, Reason: "disk-write", Share: 1, Object: evil,
		HeldUpBy: &explain.Actor{Role: explain.ActorOutside, Comm: "x\x1b]0;", PID: 3},
		Group:    &explain.FileGroup{Pattern: evil, Files: 12, Created: 12},
		Blame:    &explain.Blame{Comm: "y\x07", PID: 4, Activity: "dirtied", Path: evil, Bytes: 1, Share: 1}}}}}
	var b bytes.Buffer
	Requests(&b, r, "")
	FillRequestSummaries(r)
	for _, s := range []string{b.String(), r.Requests[0].Verdict.Summary} {
		if strings.ContainsAny(s, "\x1b\x07") {
			t.Errorf("escape codes reached the words: %q", s)
		}
		if strings.Contains(s, `\x1b\x1b`) || strings.Contains(s, `\\x1b`) {
			t.Errorf("a name was escaped twice: %q", s)
		}
	}
}

// A sync blamed for many short runs says so: its share is of the waits its
// runs overlapped, which the longest run alone would not explain.
func TestSyncBlameSentences(t *testing.T) {
	one := explain.Blame{PID: 9, Comm: "sync", Activity: "sync", Share: 0.6, Syscall: "sync", Calls: 1, LongestNS: 1_200_000_000}
	if got, want := blameSentence(one), "sync (pid 9) ran sync() for 1.20 s while the target waited on storage"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	many := explain.Blame{PID: 5, Comm: "python3", Activity: "sync", Share: 1, Syscall: "fdatasync", Calls: 1234, LongestNS: 19_400_000}
	if got, want := blameSentence(many), "python3 (pid 5) ran fdatasync() 1234 times (the longest 19.4 ms) while the target waited on storage"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
