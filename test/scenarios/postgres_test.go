package scenarios

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PostgreSQL from Debian's packages, on a private cluster in a temporary
// directory that the test starts and stops: a client behind another
// session's row lock waits on the session holding it (issue 24).

// postgres is a running private cluster: its unix socket is in dir.
type postgres struct {
	dir, bin string
}

// startPostgres initdb's a cluster in a temporary directory, starts it on a
// unix socket in that directory (no TCP), and stops and removes it at the
// end of the test.
func startPostgres(t *testing.T) *postgres { t.Helper(); return startPostgresIn(t, "") }

// startPostgresIn is startPostgres with the cluster in a directory under
// parent (a slow disk's mount; "" the system's temporary directory).
func startPostgresIn(t *testing.T, parent string) *postgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Fatal("PostgreSQL is needed (make deps installs it)")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	// initdb refuses root: the cluster is the postgres user's, in a directory
	// it can reach (t.TempDir's parents are root's alone).
	dir, err := os.MkdirTemp(parent, "whyslow-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chown", "postgres:", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	asPostgres := func(args ...string) *exec.Cmd {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
	}
	data := filepath.Join(dir, "data")
	if out, err := asPostgres(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	opts := "-k " + dir + " -c listen_addresses= -c fsync=on -c synchronous_commit=on"
	if out, err := asPostgres(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		asPostgres(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop").Run()
	})
	return &postgres{dir: dir, bin: bin}
}

// psql is the arguments that run psql on the cluster with SQL.
func (p *postgres) psql(sql string) []string {
	return []string{filepath.Join(p.bin, "psql"), "-X", "-q", "-At", "-h", p.dir, "-U", "postgres", "-c", sql}
}

// holdRow starts a session that updates row 1, says its backend's pid,
// keeps the row locked for hold, and commits. It returns that backend's pid.
// With oneMessage the sleep and the COMMIT go in one message (psql's \;),
// so that the backend commits the moment its sleep's timer ends, with no
// wait for the client between: the holder's last wait is its sleep.
func (p *postgres) holdRow(t *testing.T, hold time.Duration, oneMessage bool) int {
	t.Helper()
	cmd := exec.Command(filepath.Join(p.bin, "psql"), "-X", "-q", "-At", "-h", p.dir, "-U", "postgres")
	between := ";\n"
	if oneMessage {
		between = " \\; "
	}
	cmd.Stdin = strings.NewReader(fmt.Sprintf(
		"BEGIN;\nUPDATE t SET v = v + 1 WHERE id = 1;\nSELECT pg_backend_pid();\nSELECT pg_sleep(%.3f)%sCOMMIT;\n", hold.Seconds(), between))
	line := startedSaying(t, cmd)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the holding session's pid: %q", line)
	}
	return pid
}

// Serial: beside the tests that only wait, its system-wide record gave
// "ipc" once (2026-11-29).
func TestPostgresRowLock(t *testing.T) {
	requireRoot(t)
	pg := startPostgres(t)
	setup := pg.psql("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)")
	if out, err := exec.Command(setup[0], setup[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("creating the table: %v\n%s", err, out)
	}
	update := pg.psql("UPDATE t SET v = v + 1 WHERE id = 1")
	const hold = 2 * time.Second

	// The holder's COMMIT as its client's next message, or in one message
	// with its sleep: then the holder never waits for its client before it
	// lets go, and its sleep, begun before capture, is the wait the path
	// meets in it (a verdict of ipc in CI once: the sleep's timer was not
	// told, and the poll read as one on the backend's pipes).
	for _, oneMessage := range []bool{false, true} {
		t.Run(map[bool]string{false: "commit after", true: "commit in the sleep's message"}[oneMessage], func(t *testing.T) {
			// Untraced first: the UPDATE waits for the holder to commit.
			pg.holdRow(t, hold, oneMessage)
			start := time.Now()
			if out, err := exec.Command(update[0], update[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("UPDATE: %v\n%s", err, out)
			}
			if took := time.Since(start); took < hold/2 {
				t.Fatalf("the UPDATE took %v behind a row held %v: no lock wait", took, hold)
			}

			var holder int
			explainWays(t, func(t *testing.T) { holder = pg.holdRow(t, hold, oneMessage) }, update, func(t *testing.T, x *explanation, stderr string) {
				checkRowLock(t, x, stderr, holder)
			})
		})
	}
}

// checkRowLock: the UPDATE's time is the lock, held by the holding backend.
func checkRowLock(t *testing.T, x *explanation, stderr string, holder int) {
	t.Helper()
	if x.Verdict.Reason != "lock" {
		t.Fatalf("verdict %q, want lock: the UPDATE waited on another session's row lock\n%s", x.Verdict.Reason, stderr)
	}
	var blamed bool
	for _, b := range x.Blame {
		blamed = blamed || b.PID == uint32(holder) && b.Activity == "lock"
	}
	if !blamed {
		t.Errorf("the holding backend (pid %d) is not blamed with activity lock: %+v\n%s", holder, x.Blame, stderr)
	}
	if !strings.Contains(strings.Join(strings.Fields(stderr), " "), fmt.Sprintf("held up by postgres (pid %d)", holder)) {
		t.Errorf("the text does not name the holding backend (pid %d)\n%s", holder, stderr)
	}
	checkRanked(t, x, stderr)
}

// checkRanked: with the critical path as basis, ranked adds up to wall_s.
func checkRanked(t *testing.T, x *explanation, stderr string) {
	t.Helper()
	var sum float64
	for _, r := range x.Verdict.Ranked {
		sum += r.S
	}
	if d := sum - x.WallS; d > 0.02*x.WallS+0.005 || d < -0.02*x.WallS-0.005 {
		t.Errorf("ranked adds up to %.3f s, wall %.3f s\n%s", sum, x.WallS, stderr)
	}
}
