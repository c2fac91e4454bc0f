package scenarios

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // a client that prepares statements (COM_STMT_*), as applications do
)

// mariadb is a running private MariaDB server: its socket is sock.
type mariadb struct {
	sock string
	pid  int
}

// startMariaDB installs a data directory in a temporary directory, starts
// mariadbd on it with a private socket and port, and stops it at the end of
// the test.
func startMariaDB(t *testing.T) *mariadb {
	t.Helper()
	if _, err := exec.LookPath("mariadbd"); err != nil {
		if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
			t.Fatal("mariadbd is needed (make deps installs mariadb-server)")
		}
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	m := &mariadb{sock: filepath.Join(dir, "sock")}
	cmd := exec.Command("/usr/sbin/mariadbd", "--no-defaults", "--datadir="+data, "--socket="+m.sock,
		"--port="+strconv.Itoa(freePort(t)), "--bind-address=127.0.0.1", "--user=root", "--pid-file="+filepath.Join(dir, "pid"),
		"--log-error="+filepath.Join(dir, "err"), "--skip-log-bin", "--innodb-buffer-pool-size=32M", "--innodb-lock-wait-timeout=20")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	m.pid = cmd.Process.Pid
	for i := 0; ; i++ {
		if exec.Command("mariadb", "--no-defaults", "-S", m.sock, "-u", "root", "-e", "SELECT 1").Run() == nil {
			break
		}
		if i == 100 {
			log, _ := os.ReadFile(filepath.Join(dir, "err"))
			t.Fatalf("mariadbd never answered:\n%s", log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.cli(t, "CREATE DATABASE w; CREATE TABLE w.t (id int PRIMARY KEY, v int) ENGINE=InnoDB; INSERT INTO w.t VALUES (1, 0), (2, 0)")
	return m
}

// cli runs the mariadb client with SQL on database w (once it exists).
func (m *mariadb) cli(t *testing.T, sql string) {
	t.Helper()
	if out, err := exec.Command("mariadb", "--no-defaults", "-S", m.sock, "-u", "root", "-e", sql).CombinedOutput(); err != nil {
		t.Fatalf("mariadb -e %q: %v\n%s", sql, err, out)
	}
}

// conn is one connection of go-sql-driver/mysql to database w.
func (m *mariadb) conn(t *testing.T) *sql.Conn {
	t.Helper()
	db, err := sql.Open("mysql", "root@unix("+m.sock+")/w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRequestsMariaDB: from mariadbd, the mariadb client's queries,
// COM_QUERY and prepared statements of an application's driver, and an
// UPDATE blocked behind another transaction's row lock. Each is one request
// labelled by statement and table; the handshake is none.
func TestRequestsMariaDB(t *testing.T) {
	requireRoot(t)
	m := startMariaDB(t)
	ctx := context.Background()
	app, holder, blocked := m.conn(t), m.conn(t), m.conn(t)
	stop := recordServer(t, m.pid)

	m.cli(t, "SELECT v FROM w.t WHERE id = 2")
	for range 3 {
		if _, err := app.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = 2"); err != nil {
			t.Fatal(err)
		}
	}
	var v int // prepared, executed, closed: two requests (a close is not answered)
	if err := app.QueryRowContext(ctx, "SELECT v FROM t WHERE id = ?", 2).Scan(&v); err != nil {
		t.Fatal(err)
	}
	// The row lock: the holder keeps row 1 for 1.5 s.
	for _, q := range []string{"BEGIN", "UPDATE t SET v = v + 1 WHERE id = 1"} {
		if _, err := holder.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	held := make(chan error, 1)
	go func() {
		_, err := holder.ExecContext(ctx, "SELECT SLEEP(1.5)")
		if err == nil {
			_, err = holder.ExecContext(ctx, "COMMIT")
		}
		held <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if _, err := blocked.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	r, _ := stop()

	checkLabels(t, r, map[string]int{
		"mysql SELECT w.t": 1, "mysql UPDATE t": 3 + 2, "mysql PREPARE SELECT t": 1, "mysql SELECT t": 1,
		"mysql BEGIN": 1, "mysql SELECT": 1, "mysql COMMIT": 1,
	})
	if waited < time.Second {
		t.Fatalf("the UPDATE waited %v for the row: no lock", waited)
	}
	if i := slowest(r, "mysql UPDATE t"); i >= 0 {
		q := r.Requests[i]
		checkClientTime(t, "the blocked UPDATE", q.DurationS, waited)
		if q.Verdict.Reason != "lock" {
			t.Errorf("the blocked UPDATE: verdict %s (%s), want lock", q.Verdict.Reason, q.Verdict.Summary)
		}
		// held by the holding session's thread of mariadbd, not the process
		if h := q.Verdict.HeldUpBy; h == nil || h.PID != uint32(m.pid) || h.TID == 0 || h.TID == q.TID {
			t.Errorf("the blocked UPDATE (tid %d) is held up by %+v, want another thread of mariadbd (pid %d): %s", q.TID, h, m.pid, q.Verdict.Summary)
		}
	}
}
