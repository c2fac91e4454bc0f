package scenarios

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PostgreSQL as its DBA records it, from the postmaster (issue 42): a
// request's window is walked by the same rules as `run -- psql`, so the
// UPDATE behind another session's row lock is LOCK, held by that session's
// backend, and the holder's pg_sleep is sleep, not a wait on a pipe.

// serverRequests is what these tests read of report requests' JSON.
type serverRequests struct {
	Count    int `json:"count"`
	Requests []struct {
		PID       uint32  `json:"pid"`
		Label     string  `json:"label"`
		DurationS float64 `json:"duration_s"`
		Verdict   struct {
			Reason   string `json:"reason"`
			Summary  string `json:"summary"`
			HeldUpBy *struct {
				PID uint32 `json:"pid"`
			} `json:"held_up_by"`
			Blame *struct {
				PID      uint32 `json:"pid"`
				Activity string `json:"activity"`
			} `json:"blame"`
		} `json:"verdict"`
	} `json:"requests"`
}

func TestPostgresRowLockFromThePostmaster(t *testing.T) {
	requireRoot(t)
	pg := startPostgres(t)
	setup := pg.psql("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
	if out, err := exec.Command(setup[0], setup[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("creating the table: %v\n%s", err, out)
	}
	pidFile, err := os.ReadFile(filepath.Join(pg.dir, "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster := strings.SplitN(string(pidFile), "\n", 2)[0]
	const hold = 1500 * time.Millisecond

	stop := recordRequests(t, "record", "-p", postmaster)
	quick := pg.psql("SELECT count(*) FROM t")
	for range 5 {
		if out, err := exec.Command(quick[0], quick[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("SELECT: %v\n%s", err, out)
		}
	}
	holder := pg.holdRow(t, hold)
	update := pg.psql("UPDATE t SET v = v + 1 WHERE id = 1")
	start := time.Now()
	if out, err := exec.Command(update[0], update[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("UPDATE: %v\n%s", err, out)
	}
	client := time.Since(start)
	if client < hold/3 {
		t.Fatalf("the UPDATE took %v behind a row held %v: no lock wait", client, hold)
	}
	time.Sleep(300 * time.Millisecond) // the holder's COMMIT
	_, text, rec := stop()
	out, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "requests", rec, "--json").Output()
	if err != nil {
		t.Fatalf("report requests: %v", err)
	}
	var r serverRequests
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("requests JSON: %v\n%s", err, out)
	}

	var blocked, slept bool
	for _, q := range r.Requests {
		switch {
		case strings.HasPrefix(q.Label, "postgres UPDATE") && q.DurationS > 0.3:
			blocked = true
			if q.DurationS > client.Seconds()+0.001 {
				t.Errorf("the blocked UPDATE took %.3f s server-side, more than the client's %.3f s\n%s", q.DurationS, client.Seconds(), text)
			}
			v := q.Verdict
			if v.Reason != "lock" {
				t.Errorf("the blocked UPDATE's verdict is %q (%s), want lock: the same wait `run -- psql` calls lock\n%s", v.Reason, v.Summary, text)
			}
			if v.HeldUpBy == nil || v.HeldUpBy.PID != uint32(holder) {
				t.Errorf("the blocked UPDATE is held up by %+v, want the holding backend (pid %d)\n%s", v.HeldUpBy, holder, text)
			}
			if v.Blame == nil || v.Blame.PID != uint32(holder) || v.Blame.Activity != "lock" {
				t.Errorf("the blocked UPDATE blames %+v, want the holding backend (pid %d) for the lock\n%s", v.Blame, holder, text)
			}
		case q.PID == uint32(holder) && q.DurationS > hold.Seconds()*0.9:
			slept = true
			if q.Verdict.Reason != "sleep" {
				t.Errorf("the holder's %q is %q (%s), want sleep: it ran pg_sleep\n%s", q.Label, q.Verdict.Reason, q.Verdict.Summary, text)
			}
		}
	}
	if !blocked || !slept {
		t.Fatalf("requests found: the blocked UPDATE %v, the holder's pg_sleep %v (holder pid %d)\n%s", blocked, slept, holder, text)
	}
}
