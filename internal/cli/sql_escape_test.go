package cli

import (
	"bytes"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// A stored name with a terminal's escape (set the title, ring the bell) and
// a right-to-left override reaches a terminal escaped: always in a table,
// in CSV only when stdout is a terminal (a file keeps what was stored).
func TestSQLEscapesForTerminals(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const q = "SELECT chr(27) || ']0;owned' || chr(7) || chr(8238) || 'txt' AS name"
	print := func(as string, terminal bool) string {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b bytes.Buffer
		if err := printRows(&b, rows, as, terminal); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, c := range []struct {
		as       string
		terminal bool
		raw      bool
	}{{"table", false, false}, {"table", true, false}, {"csv", true, false}, {"csv", false, true}} {
		out := print(c.as, c.terminal)
		hasRaw := strings.ContainsAny(out, "\x1b\x07\u202e")
		if hasRaw != c.raw {
			t.Errorf("--format %s (terminal %v): %q; raw control characters %v, want %v", c.as, c.terminal, out, hasRaw, c.raw)
		}
	}
}
