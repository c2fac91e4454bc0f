package scenarios

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
)

// TestPgbenchWaitsOnTheServersFsync: a commit-heavy client (pgbench, one
// connection, synchronous_commit on) whose cluster is on a slow disk spends
// its time in its backend's WAL fsync: the verdict is sync, reached through
// the postgres process, on a WAL file (issue 24).
func TestPgbenchWaitsOnTheServersFsync(t *testing.T) {
	requireRoot(t)
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 2 << 20})
	pg := startPostgresIn(t, d.Dir)
	pgbench := filepath.Join(pg.bin, "pgbench")
	if out, err := exec.Command(pgbench, "-i", "-q", "-s", "1", "-h", pg.dir, "-U", "postgres", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	client := []string{pgbench, "-n", "-c", "1", "-t", "300", "-b", "simple-update", "-h", pg.dir, "-U", "postgres", "postgres"}
	// Untraced first: the commits wait on the disk.
	start := time.Now()
	if out, err := exec.Command(client[0], client[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	untraced := time.Since(start)
	if untraced < 500*time.Millisecond {
		t.Fatalf("300 commits took %v on a 2 MB/s disk: no fsync wait", untraced)
	}
	explainWays(t, func(*testing.T) {}, client, checkPgbench)
}

// checkPgbench: the client's time is its backend's WAL fsync.
func checkPgbench(t *testing.T, x *explanation, stderr string) {
	t.Helper()
	if x.Verdict.Reason != "sync" {
		t.Fatalf("verdict %q, want sync: pgbench waited on its backend's WAL fsync\n%s", x.Verdict.Reason, stderr)
	}
	var wal, outside bool
	for _, l := range x.Critical.Chain {
		outside = outside || l.WorkerRole == "outside" && l.WorkerComm == "postgres"
	}
	wal = strings.Contains(x.Verdict.Summary, "pg_wal/")
	if !outside {
		t.Errorf("the chain does not go into a postgres process: %+v\n%s", x.Critical.Chain, stderr)
	}
	if !wal {
		t.Errorf("the verdict does not name a WAL file: %q\n%s", x.Verdict.Summary, stderr)
	}
	checkRanked(t, x, stderr)
}
