package store_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestOlderVersionsRead: a recording of each earlier version whyslow reads,
// made from one of this version as that version's whyslow wrote it
// (storetest.Older), reads as the recording it was made from: every table
// and view of this version, with the same columns of the same types and
// the same rows. A table a later version added is there, empty; a column,
// with the value its rows had before. Issue 50: explain failed on a
// version 4 recording, which has no memory_limits.
func TestOlderVersionsRead(t *testing.T) {
	for _, story := range storetest.Stories {
		t.Run(story.Name, func(t *testing.T) {
			path := story.Record(t)
			want := relations(t, path)
			for _, v := range store.ReadVersions() {
				if v == store.SchemaVersion {
					continue
				}
				got := relations(t, storetest.Older(t, path, v))
				for name, w := range want {
					g, ok := got[name]
					switch {
					case !ok:
						t.Errorf("version %d: no %s", v, name)
					case g.columns != w.columns:
						t.Errorf("version %d: %s has columns\n %s, want\n %s", v, name, g.columns, w.columns)
					case !slices.Equal(g.rows, w.rows):
						t.Errorf("version %d: %s has %d rows %.300q, want %d %.300q", v, name, len(g.rows), g.rows, len(w.rows), w.rows)
					}
				}
				for name := range got {
					if _, ok := want[name]; !ok {
						t.Errorf("version %d: %s, which this version has not", v, name)
					}
				}
			}
		})
	}
}

// relation is a table's or view's columns and rows, as text.
type relation struct {
	columns string
	rows    []string
}

// relations are a recording's tables and views as a reader sees them: its
// own, and those the reader made (temporary), by name; the meta table
// without its schema_version.
func relations(t *testing.T, path string) map[string]relation {
	t.Helper()
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	out := map[string]relation{}
	for _, n := range queryRows(t, rec, `SELECT table_name FROM duckdb_tables() WHERE NOT internal
	  UNION SELECT view_name FROM duckdb_views() WHERE NOT internal`) {
		name := n[0].(string)
		var cols []string
		for _, c := range queryRows(t, rec, fmt.Sprintf(`DESCRIBE SELECT * FROM "%s"`, name)) {
			cols = append(cols, fmt.Sprint(c[0], " ", c[1]))
		}
		var rows []string
		for _, r := range queryRows(t, rec, fmt.Sprintf(`SELECT * FROM "%s" ORDER BY ALL`, name)) {
			if name == "meta" && r[0] == "schema_version" {
				continue
			}
			rows = append(rows, fmt.Sprint(r...))
		}
		out[name] = relation{strings.Join(cols, ", "), rows}
	}
	return out
}
