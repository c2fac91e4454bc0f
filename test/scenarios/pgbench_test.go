package scenarios

import (
	"fmt"
	"os"
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
	const bps = 2 << 20
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: bps})
	var pg *postgres
	var pgbench string
	// The cluster made and loaded at the disk's own speed, and written out:
	// at 2 MB/s its ~40 MB took 20 s, and their writeback, 30 s later, held
	// up the commits of whichever way ran then for 20 s more.
	unthrottledWrites(t, d, bps, func() {
		pg = startPostgresIn(t, d.Dir)
		pgbench = filepath.Join(pg.bin, "pgbench")
		if out, err := exec.Command(pgbench, "-i", "-q", "-s", "1", "-h", pg.dir, "-U", "postgres", "postgres").CombinedOutput(); err != nil {
			t.Fatalf("pgbench -i: %v\n%s", err, out)
		}
		checkpoint := pg.psql("CHECKPOINT")
		if out, err := exec.Command(checkpoint[0], checkpoint[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("CHECKPOINT: %v\n%s", err, out)
		}
	})
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

// unthrottledWrites runs setup with d's write throttle lifted, writes what
// it dirtied on d out at the disk's full speed, and throttles d's writes to
// bps again: a scenario's set-up (a database made and loaded) is not what it
// measures. The slow disk's Close removes the throttle in any case.
func unthrottledWrites(t *testing.T, d *slowdisk.Disk, bps uint64, setup func()) {
	t.Helper()
	const throttle = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"
	set := func(v uint64) {
		if err := os.WriteFile(throttle, []byte(fmt.Sprintf("%s %d", d.DevNum, v)), 0o644); err != nil {
			t.Fatalf("setting %s's write throttle to %d: %v", d.DevNum, v, err)
		}
	}
	set(0) // 0: no rule
	setup()
	if out, err := exec.Command("sync", "-f", d.Dir).CombinedOutput(); err != nil {
		t.Fatalf("sync -f %s: %v %s", d.Dir, err, out)
	}
	set(bps)
}
