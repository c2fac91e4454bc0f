package cli

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestMissingTableExitsBadFile: a recording whose table was dropped after
// it was written is a damaged file for every report, the HTML report and
// every export (exit 3, its line naming the file), never a usage error
// (freq said exit 2 when its analysis could not start) nor a success.
// io_limits: explain reads it when the target waited on storage; a version
// 4 recording has none of version 5's tables, and is read as one that
// saw no limit (issue 50).
func TestMissingTableExitsBadFile(t *testing.T) {
	var story storetest.Story
	for _, s := range storetest.Stories {
		if s.Name == "second-run" { // waits on disk reads
			story = s
		}
	}
	for _, table := range []string{"block_raw", "io_limits"} {
		path := story.Record(t)
		db, err := sql.Open("duckdb", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("DROP TABLE " + table + " CASCADE"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		// What reads io_limits: the explanations (a storage verdict).
		commands := [][]string{{"report", "explain"}, {"report", "html", "-o", "OUT/r.html"},
			{"export", "otlp", "--endpoint", "http://127.0.0.1:1"}}
		if table == "block_raw" {
			for _, r := range []string{"freq", "stats", "usage", "top", "log"} {
				commands = append(commands, []string{"report", r})
			}
			commands = append(commands, []string{"export", "folded"}, []string{"export", "perfetto", "-o", "OUT/t.pftrace"},
				[]string{"export", "parquet", "-o", "OUT/pq"})
		}
		for _, c := range commands {
			args := []string{c[0], c[1], path}
			for _, a := range c[2:] {
				args = append(args, strings.ReplaceAll(a, "OUT", t.TempDir()))
			}
			root := newRoot()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(args)
			err := root.Execute()
			if got := codeOf(err); err == nil || got != ExitBadFile {
				t.Errorf("without %s: %s %s: exit %d (%v), want %d", table, c[0], c[1], got, err, ExitBadFile)
				continue
			}
			// Main prints its first line (report).
			if msg := namingRecording(err, args).Error(); !strings.HasPrefix(msg, path+": damaged: ") {
				t.Errorf("without %s: %s %s: %q, want it to name %s", table, c[0], c[1], msg, filepath.Base(path))
			}
		}
	}
}
