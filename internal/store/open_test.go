package store_test

import (
	"bufio"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestOpenLocksEveryConnection: an analysis runs a query while it reads
// another's rows, on a second connection. That connection must work, must be
// as locked down as the first (no file outside the recording read or
// written), and closing must free the recording for the next Open.
func TestOpenLocksEveryConnection(t *testing.T) {
	path := storetest.Stories[1].Record(t)
	out := filepath.Join(t.TempDir(), "out.csv")
	for round := 0; round < 2; round++ {
		rec, err := store.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := rec.DB.Query("SELECT key FROM meta")
		if err != nil {
			t.Fatal(err)
		}
		rows.Next() // the first connection stays busy
		var n int
		if err := rec.DB.QueryRow("SELECT count(*) FROM syscalls").Scan(&n); err != nil || n == 0 {
			t.Errorf("a query on a second connection: %d rows, %v", n, err)
		}
		for _, q := range []string{
			"COPY (SELECT * FROM meta) TO '" + out + "'",
			"SELECT * FROM read_csv('/etc/passwd')",
			"SET enable_external_access = true",
			"CREATE TABLE x (a INTEGER)",
		} {
			if _, err := rec.DB.Exec(q); err == nil {
				t.Errorf("%s: allowed on a second connection", q)
			}
		}
		rows.Close()
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// holdEnv names the recording TestHelperHoldRecording holds open for writing.
const holdEnv = "WHYSLOW_TEST_HOLD_RECORDING"

// TestHelperHoldRecording is not a test: run by TestOpenSaysWhyDuckDBRefused
// in a process of its own, it records into a file and keeps it open (and
// locked, as a running recorder does) until its stdin closes.
func TestHelperHoldRecording(t *testing.T) {
	path := os.Getenv(holdEnv)
	if path == "" {
		t.Skip("a helper process, run by TestOpenSaysWhyDuckDBRefused")
	}
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("holding")
	io.Copy(io.Discard, os.Stdin)
	w.Close(nil)
}

// TestOpenSaysWhyDuckDBRefused: a DuckDB file that DuckDB will not open is
// not "not a whyslow recording": the one-line error gives DuckDB's reason
// (its first line, no advice, no stack). Files that are not recordings keep
// ErrNotRecording.
func TestOpenSaysWhyDuckDBRefused(t *testing.T) {
	dir := t.TempDir()
	refused := func(t *testing.T, path, reason string) {
		t.Helper()
		_, err := store.Open(path)
		if err == nil {
			t.Fatal("opened")
		}
		if errors.Is(err, store.ErrNotRecording) || !errors.Is(err, store.ErrUnreadable) {
			t.Errorf("%v: want ErrUnreadable, not ErrNotRecording", err)
		}
		if msg := err.Error(); !strings.Contains(msg, reason) || strings.Contains(msg, "\n") || strings.Contains(msg, "database/sql") {
			t.Errorf("%q: want one line with DuckDB's reason %q", msg, reason)
		}
	}

	t.Run("locked by a recorder", func(t *testing.T) {
		path := filepath.Join(dir, "locked.db")
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldRecording$", "-test.count=1")
		cmd.Env = append(os.Environ(), holdEnv+"="+path)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Wait()
		defer stdin.Close()
		if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "holding\n" {
			t.Fatalf("helper: %q, %v", line, err)
		}
		refused(t, path, "lock")
	})

	t.Run("newer DuckDB", func(t *testing.T) {
		path := storetest.Stories[1].Record(t)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		setStorageVersion(b, 9999)
		newer := filepath.Join(dir, "newer.db")
		if err := os.WriteFile(newer, b, 0o644); err != nil {
			t.Fatal(err)
		}
		refused(t, newer, "version number 9999")
	})

	t.Run("not recordings", func(t *testing.T) {
		text := filepath.Join(dir, "text")
		os.WriteFile(text, []byte("hello, this is not a database at all\n"), 0o644)
		other := filepath.Join(dir, "other.db")
		db, err := sql.Open("duckdb", other)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("CREATE TABLE t (a INTEGER)"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		for _, path := range []string{text, other, dir} {
			if _, err := store.Open(path); !errors.Is(err, store.ErrNotRecording) {
				t.Errorf("%s: %v, want ErrNotRecording", path, err)
			}
		}
	})
}

// setStorageVersion writes a DuckDB file's storage version into its main
// header (after the 8-byte checksum and "DUCK") and recomputes the header
// block's checksum, as DuckDB does (storage/checksum.cpp): 5381 XOR each
// 8-byte word of the 4088 bytes after it times a constant.
func setStorageVersion(b []byte, v uint64) {
	binary.LittleEndian.PutUint64(b[12:20], v)
	var sum uint64 = 5381
	for i := 8; i < 4096; i += 8 {
		sum ^= binary.LittleEndian.Uint64(b[i:i+8]) * 0xbf58476d1ce4e5b9
	}
	binary.LittleEndian.PutUint64(b[0:8], sum)
}

const deniedEnv = "WHYSLOW_TEST_DENIED"

// TestOpenDeniedIsUnreadable: a recording the user may not read is
// ErrUnreadable (exit 3, docs/exit-codes.md), not a missing privilege to
// capture (exit 4), in one line that says why. Root reads any file: as root
// the check runs again in a process of its own, still uid 0 but without
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, to which a mode 000 file is
// closed.
func TestOpenDeniedIsUnreadable(t *testing.T) {
	path := os.Getenv(deniedEnv)
	if path == "" {
		path = filepath.Join(t.TempDir(), "denied.db")
		if err := os.WriteFile(path, nil, 0); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			setpriv, err := exec.LookPath("setpriv")
			if err != nil {
				t.Fatal("setpriv (util-linux) is needed to drop root's file capabilities")
			}
			caps := "-dac_override,-dac_read_search"
			cmd := exec.Command(setpriv, "--bounding-set="+caps, "--inh-caps="+caps, "--",
				os.Args[0], "-test.run=^TestOpenDeniedIsUnreadable$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), deniedEnv+"="+path)
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestOpenDeniedIsUnreadable") {
				t.Errorf("without root's file capabilities: %v\n%s", err, out)
			}
			return
		}
	}
	_, err := store.Open(path)
	if !errors.Is(err, store.ErrUnreadable) || errors.Is(err, store.ErrNotRecording) {
		t.Errorf("%v: want ErrUnreadable", err)
	}
	if msg := fmt.Sprint(err); !strings.Contains(msg, "permission denied") || strings.Contains(msg, "\n") {
		t.Errorf("%q: want one line saying permission denied", msg)
	}
}
