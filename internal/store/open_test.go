package store_test

import (
	"path/filepath"
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
