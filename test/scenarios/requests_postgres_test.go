package scenarios

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/whyslow/whyslow/test/harness"
)

// Requests framed by message (issue 42 item 3): database and cache servers
// recorded as their admin would, from the server's first process with
// `whyslow record --requests -p PID`, while clients measure every request.

// recordServer starts `whyslow record --requests -p pid`; stop ends it and
// returns `report requests` of the recording, and the recording.
func recordServer(t *testing.T, pid int) (stop func() (*requestsJSON, string)) {
	t.Helper()
	rec := filepath.Join(t.TempDir(), "rec.db")
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "record", "-p", strconv.Itoa(pid), "--requests", "-o", rec)
	errb := harness.StartRecorder(t, cmd)
	return func() (*requestsJSON, string) {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("record --requests: %v\n%s", err, errb.String())
		}
		out, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "requests", rec, "--json", "--limit", "100000").Output()
		if err != nil {
			t.Fatalf("report requests: %v\n%s", err, out)
		}
		var r requestsJSON
		if err := json.Unmarshal(out, &r); err != nil || r.Schema != "whyslow.requests/v1" {
			t.Fatalf("requests JSON: %v %q", err, r.Schema)
		}
		return &r, rec
	}
}

// labelCounts is a recording's requests by label.
func labelCounts(r *requestsJSON) map[string]int {
	out := map[string]int{}
	for _, l := range r.ByLabel {
		out[l.Label] = l.Count
	}
	return out
}

// checkLabels fails unless the requests are exactly want, by label.
func checkLabels(t *testing.T, r *requestsJSON, want map[string]int) {
	t.Helper()
	got := labelCounts(r)
	total := 0
	for _, n := range want {
		total += n
	}
	if r.Count != total || len(got) != len(want) {
		t.Errorf("%d requests %v, want %d %v", r.Count, got, total, want)
		return
	}
	for l, n := range want {
		if got[l] != n {
			t.Errorf("%d requests %q, want %d (all: %v)", got[l], l, n, got)
		}
	}
}

// slowest is the index of the slowest request labelled label, -1 none.
func slowest(r *requestsJSON, label string) (i int) {
	for i, q := range r.Requests { // slowest first
		if q.Label == label {
			return i
		}
	}
	return -1
}

// checkClientTime: a request's server-side time is no longer than the
// client's own measurement (+1 ms), and most of it.
func checkClientTime(t *testing.T, what string, server float64, client time.Duration) {
	t.Helper()
	s := time.Duration(server * 1e9)
	if s > client+time.Millisecond || s < client*8/10 {
		t.Errorf("%s: %v server-side, %v at the client", what, s, client)
	}
}

func postmasterPID(t *testing.T, pg *postgres) int {
	b, err := os.ReadFile(filepath.Join(pg.dir, "data", "postmaster.pid"))
	pid, _ := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil || pid <= 0 {
		t.Fatalf("the postmaster's pid: %v %q", err, b)
	}
	return pid
}

// TestRequestsPostgres: from the postmaster, psql's simple queries,
// extended-protocol queries one by one, a pipeline of three (one request
// per Sync), pgbench -M extended, and an UPDATE blocked behind another
// session's row lock. Each is one request, labelled by its statement and
// table; connecting is none.
func TestRequestsPostgres(t *testing.T) {
	requireRoot(t)
	pg := startPostgres(t)
	create := pg.psql("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0), (2, 0)")
	if out, err := exec.Command(create[0], create[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("psql: %v %s", err, out)
	}
	pgbench := filepath.Join(pg.bin, "pgbench")
	if out, err := exec.Command(pgbench, "-i", "-q", "-s", "1", "-h", pg.dir, "-U", "postgres", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	stop := recordServer(t, postmasterPID(t, pg))

	for range 3 {
		psql := pg.psql("SELECT v FROM t WHERE id = 2")
		if out, err := exec.Command(psql[0], psql[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("psql: %v %s", err, out)
		}
	}
	ctx := context.Background()
	dial := func() *pgconn.PgConn {
		c, err := pgconn.Connect(ctx, "host="+pg.dir+" user=postgres dbname=postgres")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		return c
	}
	c := dial()
	// Parse, Bind, Describe, Execute, Sync: one round trip each.
	for i := range 5 {
		if _, err := c.ExecParams(ctx, "UPDATE t SET v = v + $1 WHERE id = 2", [][]byte{[]byte(strconv.Itoa(i))}, nil, nil, nil).Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Three queries, each with its Sync, sent at once: three requests.
	p := c.StartPipeline(ctx)
	for _, q := range []string{"SELECT v FROM t WHERE id = $1", "INSERT INTO t VALUES ($1, 0)", "DELETE FROM t WHERE id = $1"} {
		p.SendQueryParams(q, [][]byte{[]byte("3")}, nil, nil, nil)
		p.SendPipelineSync()
	}
	sent := time.Now()
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	var pipelined []time.Duration
	for len(pipelined) < 3 {
		res, err := p.GetResults()
		switch v := res.(type) {
		case *pgconn.ResultReader:
			if _, err := v.Close(); err != nil {
				t.Fatal(err)
			}
		case *pgconn.PipelineSync:
			pipelined = append(pipelined, time.Since(sent))
		case nil:
			t.Fatalf("pipeline: %v", err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	// pgbench, extended protocol: 20 SELECTs (and its own looks at the tables).
	if out, err := exec.Command(pgbench, "-n", "-M", "extended", "-c", "1", "-t", "20", "-b", "select-only", "-h", pg.dir, "-U", "postgres", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	// The row lock: the holder's one query keeps row 1 for 1.5 s.
	holder := dial()
	held := make(chan error, 1)
	go func() {
		_, err := holder.Exec(ctx, "BEGIN; UPDATE t SET v = v + 1 WHERE id = 1; SELECT pg_sleep(1.5); COMMIT").ReadAll()
		held <- err
	}()
	time.Sleep(200 * time.Millisecond)
	blocked := dial()
	start := time.Now()
	if _, err := blocked.ExecParams(ctx, "UPDATE t SET v = v + 1 WHERE id = 1", nil, nil, nil, nil).Close(); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	r, _ := stop()

	checkLabels(t, r, map[string]int{
		"postgres SELECT t": 3 + 1, "postgres UPDATE t": 5 + 1, "postgres INSERT t": 1, "postgres DELETE t": 1,
		"postgres SELECT pgbench_accounts": 20, "postgres BEGIN": 1,
		// pgbench's own looks at the scale and at partitions
		"postgres SELECT pgbench_branches": 1, "postgres SELECT pg_catalog.pg_class": 1,
	})
	// The same rules as `run -- psql` (issue 42): the blocked UPDATE is the
	// lock, held by the holding backend, and the holder's pg_sleep a sleep.
	backend := holder.PID()
	if i := slowest(r, "postgres UPDATE t"); i >= 0 {
		q := r.Requests[i]
		checkClientTime(t, "the blocked UPDATE", q.DurationS, waited)
		v := q.Verdict
		if v.Reason != "lock" {
			t.Errorf("the blocked UPDATE's verdict is %q (%s), want lock", v.Reason, v.Summary)
		}
		if v.HeldUpBy == nil || v.HeldUpBy.PID != backend {
			t.Errorf("the blocked UPDATE is held up by %+v, want the holding backend (pid %d)", v.HeldUpBy, backend)
		}
		if v.Blame == nil || v.Blame.PID != backend || v.Blame.Activity != "lock" {
			t.Errorf("the blocked UPDATE blames %+v, want the holding backend (pid %d) for the lock", v.Blame, backend)
		}
	}
	if i := slowest(r, "postgres BEGIN"); i < 0 {
		t.Error("no request of the holder's")
	} else if q := r.Requests[i]; q.PID != backend || q.Verdict.Reason != "sleep" {
		t.Errorf("the holder's request (backend %d): pid %d, verdict %q (%s), want its pg_sleep a sleep", backend, q.PID, q.Verdict.Reason, q.Verdict.Summary)
	}
	// Each pipelined request ends with its own ReadyForQuery, no later than
	// the client had it.
	for i, label := range []string{"postgres SELECT t", "postgres INSERT t", "postgres DELETE t"} {
		best := -1.0
		for _, q := range r.Requests {
			if q.Label == label && (best < 0 || q.DurationS < best) {
				best = q.DurationS
			}
		}
		if s := time.Duration(best * 1e9); best < 0 || s > pipelined[i]+time.Millisecond {
			t.Errorf("pipelined %s: %v server-side, %v at the client", label, s, pipelined[i])
		}
	}
}
