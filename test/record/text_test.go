package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/test/harness"
)

// TestNamesThatAreNotUTF8: a program whose name is not UTF-8 (bytes 0xff
// 0xfe, as a file name may hold) writes and reads a file whose name is not
// either, and runs a child whose 15-byte command name the kernel cut in the
// middle of a character. Each name is in the recording, escaped as
// docs/trace-format.md says (DuckDB would store the raw bytes as NULL), and
// the run's JSON is valid and holds them.
func TestNamesThatAreNotUTF8(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	prog, child := filepath.Join(dir, "\xff\xfeprog"), filepath.Join(dir, "my数据库服务进程")
	data, childData := filepath.Join(dir, "bad\xffname.dat"), filepath.Join(dir, "child\xe9.dat")
	script := "#!" + harness.Python(t) + `
import os, subprocess, sys
path = os.fsencode(sys.argv[1])
fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
os.write(fd, b"u" * (1 << 20))
os.fsync(fd)  # a wait on the file: the default level sees it
os.close(fd)
with open(path, "rb") as f:
    f.read()
if len(sys.argv) > 3:
    subprocess.run([sys.argv[2], sys.argv[3]], check=True)
`
	for _, p := range []string{prog, child} {
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rec, js := filepath.Join(dir, "rec.db"), filepath.Join(dir, "run.json")
	if _, errs, code := whyslow(t, "run", "--linger", "0", "-o", rec, "--json", js, "--", prog, data, child, childData); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}

	// As docs/trace-format.md escapes them: stray bytes \xNN, the rest kept.
	progComm, childComm := `\xff\xfeprog`, `my数据库服\xe5` // 务 is e5 8a a1: its first byte is the 15th
	dataPath := filepath.Join(dir, `bad\xffname.dat`)
	childPath := filepath.Join(dir, `child\xe9.dat`)
	progPath := filepath.Join(dir, `\xff\xfeprog`)

	strs := func(query string) []string {
		t.Helper()
		out, errs, code := whyslow(t, "sql", rec, query, "--format", "json")
		if code != 0 {
			t.Fatalf("sql %s: exit %d: %s", query, code, errs)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("sql %s: %v\n%s", query, err, out)
		}
		var got []string
		for _, r := range rows {
			s, ok := r["v"].(string)
			if !ok {
				t.Errorf("sql %s: a row holds %v, not a string", query, r["v"])
			}
			got = append(got, s)
		}
		return got
	}
	contains := func(what string, got []string, want ...string) {
		t.Helper()
		for _, w := range want {
			found := false
			for _, g := range got {
				found = found || strings.Contains(g, w)
			}
			if !found {
				t.Errorf("%s: no %q in %q", what, w, got)
			}
		}
	}
	pids := "(SELECT pid FROM execs WHERE filename IN ('" + progPath + "', '" + filepath.Join(dir, "my数据库服务进程") + "'))"
	contains("comms", strs("SELECT DISTINCT comm AS v FROM processes WHERE pid IN "+pids), progComm, childComm)
	contains("threads", strs("SELECT DISTINCT comm AS v FROM threads WHERE pid IN "+pids), progComm, childComm)
	contains("exec filenames", strs("SELECT filename AS v FROM execs WHERE pid IN "+pids), progPath)
	contains("exec args", strs("SELECT unnest(args) AS v FROM execs WHERE pid IN "+pids), dataPath, childPath)
	contains("files", strs("SELECT path AS v FROM files"), dataPath, childPath)
	contains("waits on files", strs("SELECT DISTINCT path AS v FROM io WHERE pid IN "+pids+" AND path IS NOT NULL"), dataPath, childPath)
	contains("command", strs("SELECT value AS v FROM meta WHERE key = 'command'"), progPath, dataPath)
	// The end checks which files are gone by their own bytes, not their text.
	if gone := strs("SELECT path AS v FROM file_names WHERE deleted AND path LIKE '" + dir + "/%'"); len(gone) > 0 {
		t.Errorf("files still there marked deleted: %q", gone)
	}
	if nulls := strs("SELECT 'comm ' || pid AS v FROM processes WHERE comm IS NULL UNION ALL " +
		"SELECT 'path ' || ino FROM files WHERE path IS NULL"); len(nulls) > 0 {
		t.Errorf("names recorded as NULL: %v", nulls)
	}

	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("run --json wrote invalid JSON:\n%s", b)
	}
	var run struct {
		Target struct {
			Command string `json:"command"`
		} `json:"target"`
		Threads []struct {
			Comm string `json:"comm"`
		} `json:"threads"`
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	var comms, paths []string
	for _, th := range run.Threads {
		comms = append(comms, th.Comm)
	}
	for _, f := range run.Files {
		paths = append(paths, f.Path)
	}
	contains("run --json threads", comms, progComm, childComm)
	contains("run --json files", paths, dataPath, childPath)
	contains("run --json command", []string{run.Target.Command}, progPath)
}
