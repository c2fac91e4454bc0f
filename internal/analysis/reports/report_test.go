package reports

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// Filters bind values as parameters: a hostile name is data, not SQL.
func TestFilterBindsValues(t *testing.T) {
	f := source.NoFilter()
	f.Comms = []string{"x'); DROP TABLE syscalls; --"}
	f.FileGlob = "/tmp/*' OR 1=1 --"
	where, args := whereOf(f, ioCols)
	if want := "comm IN (?) AND path GLOB ?"; where != want {
		t.Fatalf("where %q, want %q", where, want)
	}
	if len(args) != 2 || args[0] != f.Comms[0] || args[1] != f.FileGlob {
		t.Errorf("args %v", args)
	}
	raw, rargs := whereOf(f, rawCols)
	if raw != "comm_id IN (SELECT comm_id FROM comms WHERE comm IN (?)) AND (dev, ino, gen) IN (SELECT dev, ino, gen FROM file_names WHERE path GLOB ?)" || len(rargs) != 2 {
		t.Errorf("raw where %q %v", raw, rargs)
	}
}

// TestStatsOfAnUnknownSyscall: a call whose number syscall_names lacks (a
// doctored recording's) is counted as class none, not a failed scan.
func TestStatsOfAnUnknownSyscall(t *testing.T) {
	r := storetest.New(t, "unknown-syscall", map[string]string{"level": "full", "scope": "system"})
	tr := storetest.Thread{PID: 100, TID: 100, Comm: "odd"}
	r.Add(&event.Syscall{Header: tr.At(1), Dur: storetest.MS(2), Nr: 999, FD: -1, FD2: -1},
		tr.Call("read", 3, 1, 3, 10, event.FileRef{}))
	rec, err := store.Open(r.Close())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	st, err := RunStats(source.New(rec), source.NoFilter())
	if err != nil {
		t.Fatalf("stats with a syscall number syscall_names lacks: %v", err)
	}
	b, _ := json.Marshal(st)
	if !strings.Contains(string(b), `"none"`) || !strings.Contains(string(b), `"read"`) {
		t.Errorf("stats: %s, want classes none and read", b)
	}
}
