package store

import (
	"strings"
	"testing"
)

// TestAdditionsCoverEveryVersion: each version after the oldest read says
// what it added (an empty entry is a choice to write down), readsToo runs
// up to this version, and what additions name is in this version's schema.
func TestAdditionsCoverEveryVersion(t *testing.T) {
	for i, v := range readsToo {
		if v != readsToo[0]+i || v >= SchemaVersion {
			t.Fatalf("readsToo %v: the versions up to this one's (%d), each once", readsToo, SchemaVersion)
		}
	}
	if last := readsToo[len(readsToo)-1]; last != SchemaVersion-1 {
		t.Errorf("readsToo ends at %d: version %d is not read", last, SchemaVersion-1)
	}
	for v := readsToo[0] + 1; v <= SchemaVersion; v++ {
		n := 0
		for _, a := range additions {
			if a.version == v {
				n++
			}
		}
		if n != 1 {
			t.Errorf("version %d: %d entries in additions, want 1", v, n)
		}
	}
	for _, a := range additions {
		for _, name := range a.tables {
			columnsOf(name) // panics on a table schema.go lacks
		}
		for _, c := range a.columns {
			found := false
			for _, col := range splitColumns(columnsOf(c.table)) {
				found = found || strings.HasPrefix(col, c.column+" ")
			}
			if !found {
				t.Errorf("version %d: %s.%s is no column of this version", a.version, c.table, c.column)
			}
		}
		if p := a.packed; p != nil && !strings.Contains(strings.Join(views, "\n"), "VIEW "+p.view+" AS") {
			t.Errorf("version %d: no view %s", a.version, p.view)
		}
	}
}
