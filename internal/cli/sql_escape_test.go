package cli

import (
	"bytes"
	"database/sql"
	"encoding/json"
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

// NaN and ±Inf, which DuckDB's doubles may hold and JSON cannot, are null
// in `sql --format json`; the rest of the row is written. The whole result
// used to fail.
func TestSQLJSONNaN(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT 'nan'::DOUBLE AS n, 'inf'::DOUBLE AS i, '-inf'::FLOAT AS f, [1.5, 'nan'::DOUBLE] AS l, 2.5 AS x")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b bytes.Buffer
	if err := printRows(&b, rows, "json", false); err != nil {
		t.Fatalf("--format json with NaN: %v", err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || len(got) != 1 {
		t.Fatalf("%v: %s", err, b.String())
	}
	r := got[0]
	if r["n"] != nil || r["i"] != nil || r["f"] != nil || r["x"] != 2.5 {
		t.Errorf("row %v: want n, i, f null and x 2.5", r)
	}
	if l, _ := r["l"].([]any); len(l) != 2 || l[0] != 1.5 || l[1] != nil {
		t.Errorf("list %v: want [1.5, null]", r["l"])
	}
}
