package cli

import (
	"database/sql"
	"testing"

	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestMissingTableExitsBadFile: a recording whose table was dropped after
// it was written is a damaged file for every report (exit 3), never a
// usage error (freq said exit 2 when its analysis could not start).
func TestMissingTableExitsBadFile(t *testing.T) {
	path := storetest.Stories[0].Record(t)
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DROP TABLE block_raw CASCADE"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, report := range []string{"freq", "stats", "usage", "top", "log", "explain"} {
		_, err := runReport(t, path, report, path)
		if got := codeOf(err); got != ExitBadFile {
			t.Errorf("report %s: exit %d (%v), want %d", report, got, err, ExitBadFile)
		}
	}
}
