package cli

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestOlderVersionsReport: every report, the HTML report, every export and
// a query of what this version added work on a recording of each earlier
// version whyslow reads, made from a story as that version's whyslow wrote
// it (storetest.Older), and say what they say of the story's recording of
// this version: the stories hold no fact a later version added. Issue 50:
// report explain failed on a version 4 recording ("Table with name
// memory_limits does not exist", exit 3).
func TestOlderVersionsReport(t *testing.T) {
	otlp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf") // an empty ExportTraceServiceResponse: all taken
	}))
	t.Cleanup(otlp.Close) // after the parallel subtests
	for _, story := range storetest.Stories {
		// -short (make check): a storage verdict (which reads the cgroups'
		// limits) and a server's requests; the store's TestOlderVersionsRead
		// holds every story's tables and views to their rows.
		if testing.Short() && story.Name != "second-run" && story.Name != "slow-request" {
			continue
		}
		t.Run(story.Name, func(t *testing.T) {
			// One story at a time: run side by side, the in-process
			// exports' DuckDB instances crashed the test binary once
			// (SIGSEGV in a thread of DuckDB's, 2026-11-29), in ~15 runs.
			rec := story.Record(t)
			want := everyOutput(t, rec, otlp.URL)
			for _, v := range store.ReadVersions() {
				// -short: the version before this one alone.
				if v == store.SchemaVersion || testing.Short() && v != store.SchemaVersion-1 {
					continue
				}
				got := everyOutput(t, storetest.Older(t, rec, v), otlp.URL)
				for _, c := range got {
					if c.code == ExitError || c.code == ExitBadFile {
						t.Errorf("version %d: %s: exit %d: %s", v, c.name, c.code, headLine(c.out))
					}
				}
				for i, w := range want {
					if g := got[i]; g.code != w.code || g.out != w.out {
						t.Errorf("version %d: %s: exit %d, want %d; what it printed and wrote:\n%s", v, w.name, g.code, w.code, lineDiff(w.out, g.out))
					}
				}
			}
		})
	}
}

// commandOutput is what a command printed and wrote, and its exit code.
type commandOutput struct {
	name string
	code int
	out  string
}

// everyOutput runs every command that reads a recording on rec: the
// reports as text and JSON, the HTML report, the exports, and a query of
// the columns version 5 added. Paths are replaced by REC and OUT.
func everyOutput(t *testing.T, rec, otlp string) []commandOutput {
	t.Helper()
	var out []commandOutput
	run := func(file string, args ...string) {
		name := strings.Join(args, " ")
		dir := t.TempDir()
		for i, a := range args {
			args[i] = strings.ReplaceAll(strings.ReplaceAll(a, "REC", rec), "OUT", dir)
		}
		root := newRoot()
		var b bytes.Buffer
		root.SetOut(&b)
		root.SetErr(&b)
		root.SetArgs(args)
		err := root.Execute()
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
		if file != "" && err == nil {
			files, _ := filepath.Glob(filepath.Join(dir, file))
			for _, f := range files {
				fmt.Fprintf(&b, "%s:\n%s\n", filepath.Base(f), contents(t, f))
			}
			if len(files) == 0 {
				fmt.Fprintf(&b, "no %s written\n", file)
			}
		}
		s := strings.ReplaceAll(strings.ReplaceAll(b.String(), rec, "REC"), dir, "OUT")
		s = nonce.ReplaceAllString(s, "nonce")
		code := ExitOK
		if err != nil {
			code = codeOf(err)
		}
		out = append(out, commandOutput{name, code, storetest.RoundFloats(s)})
	}
	// -short (make check): the JSON of each report, which holds every fact
	// its text words (explain's text also reads the requests).
	for _, r := range []string{"explain", "usage", "stats", "freq", "top", "log", "requests"} {
		if r == "explain" || !testing.Short() {
			run("", "report", r, "REC")
		}
		run("", "report", r, "REC", "--json")
	}
	if !testing.Short() {
		run("", "report", "log", "REC", "--format", "csv")
		run("", "export", "otlp", "REC", "--endpoint", otlp, "--critical-path")
	}
	run("r.html", "report", "html", "REC", "-o", "OUT/r.html")
	run("", "export", "folded", "REC")
	run("", "export", "folded", "REC", "--by-reason", "--oncpu")
	run("t.pftrace", "export", "perfetto", "REC", "-o", "OUT/t.pftrace")
	run("*.parquet", "export", "parquet", "REC", "-o", "OUT")
	run("", "export", "otlp", "REC", "--endpoint", otlp)
	run("", "sql", "REC", "SELECT count(*), sum(waits), sum(max_ns), count(*) FILTER (WHERE quota) FROM offcpu")
	run("", "sql", "REC", "SELECT (SELECT count(*) FROM cpu_quotas), (SELECT count(*) FROM memory_limits), (SELECT count(*) FROM io_limits), (SELECT count(cgroup) FROM existing)")
	return out
}

// contents is what a file a command wrote holds: a Parquet file's columns
// and rows (the meta table's but its schema_version), another's bytes.
func contents(t *testing.T, path string) string {
	t.Helper()
	if !strings.HasSuffix(path, ".parquet") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	for _, q := range []string{"DESCRIBE SELECT * FROM read_parquet(?)", "SELECT * FROM read_parquet(?) ORDER BY ALL"} {
		rows, err := db.Query(q, path)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			v := make([]any, len(cols))
			p := make([]any, len(cols))
			for i := range v {
				p[i] = &v[i]
			}
			if err := rows.Scan(p...); err != nil {
				t.Fatal(err)
			}
			if filepath.Base(path) != "meta.parquet" || v[0] != "schema_version" {
				fmt.Fprintln(&b, v...)
			}
		}
		rows.Close()
	}
	return b.String()
}

// nonce is the HTML report's script nonce, new in every report.
var nonce = regexp.MustCompile(`nonce(-|=")[A-Za-z0-9_-]+`)

func headLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
