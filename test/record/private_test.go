package record

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/test/harness"
)

// TestRecordingIsPrivate: a recording holds paths, command lines and peers,
// so it and its JSON are created 0600 whatever the umask; the command run
// keeps the user's umask for its own files.
func TestRecordingIsPrivate(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	rec, js, own := filepath.Join(dir, "r.db"), filepath.Join(dir, "r.json"), filepath.Join(dir, "own")
	cmd := exec.Command("sh", "-c", `umask 022; exec "$0" run --linger 0 -o "$1" --json "$2" -- touch "$3"`,
		filepath.Join(bin, "whyslow"), rec, js, own)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, p := range []string{rec, js} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s is %o, want 600", filepath.Base(p), m)
		}
	}
	if st, err := os.Stat(own); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the command's own file: %v %v, want mode 644 (the user's umask)", st.Mode(), err)
	}
}

// TestSQLWritesNothing: `whyslow sql` runs as root; its query must not write
// or read any file but the recording.
func TestSQLWritesNothing(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "r.db")
	if _, errs, code := whyslow(t, "record", "-o", rec, "--", "true"); code != 0 {
		t.Fatalf("record: exit %d: %s", code, errs)
	}
	out := filepath.Join(dir, "out.csv")
	// A directory named as DuckDB's default temporary one, with a file in it.
	os.Mkdir(rec+".tmp", 0o700)
	os.WriteFile(filepath.Join(rec+".tmp", "secret"), []byte("secret"), 0o600)
	for _, q := range []string{
		"COPY (SELECT * FROM meta) TO '" + out + "'",
		"SELECT * FROM read_csv('/etc/passwd')",
		"ATTACH '" + filepath.Join(dir, "other.db") + "' AS o",
		"SET enable_external_access = true",
		// issue 27: DuckDB's temporary directory was open to queries (REC.tmp
		// beside the recording), statements after the first ran, and a
		// logging call aborted whyslow
		"COPY (SELECT 'x') TO '" + filepath.Join(rec+".tmp", "x.csv") + "'",
		"SELECT * FROM read_text('" + filepath.Join(rec+".tmp", "secret") + "')",
		"SELECT 1; COPY (SELECT 'x') TO '" + out + "'",
		"CALL enable_logging(level = 'trace', storage = 'file', storage_path = '" + dir + "')",
		"INSTALL httpfs",
		"LOAD httpfs",
		"PRAGMA enable_profiling = 'json'",
		"SET profiling_output = '" + filepath.Join(dir, "profile.json") + "'",
		"SELECT getenv('HOME')",
		"DROP TABLE meta",
	} {
		_, errs, code := whyslow(t, "sql", rec, q)
		if code != 2 || !strings.HasPrefix(errs, "whyslow: query: ") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, %q; want exit 2 with one line", q, code, errs)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 { // the recording and REC.tmp
		t.Errorf("sql created files: %v", ents)
	}
	if ents, _ := os.ReadDir(rec + ".tmp"); len(ents) != 1 {
		t.Errorf("sql wrote into REC.tmp: %v", ents)
	}
	if got, _, code := whyslow(t, "sql", rec, "SELECT count(*) AS n FROM meta", "--format", "json"); code != 0 || !strings.Contains(got, `"n"`) {
		t.Errorf("a plain query: exit %d, %s", code, got)
	}
}

// TestJSONHasNoNullLists: every --json output gives [] for an empty list,
// never null, so `jq '.network[]'` works on a recording with no network.
func TestJSONHasNoNullLists(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	rec, js := filepath.Join(dir, "r.db"), filepath.Join(dir, "run.json")
	// A command with no network, no files of note and no blame: most lists empty.
	if _, errs, code := whyslow(t, "run", "--linger", "0", "-o", rec, "--json", js, "--", "true"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	runJSON, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"run --json": string(runJSON)}
	for _, a := range []string{"explain", "usage", "stats", "freq", "top", "log"} {
		out, errs, code := whyslow(t, "report", a, rec, "--json", "--file", "/nonexistent/*")
		if a == "explain" {
			out, errs, code = whyslow(t, "report", a, rec, "--json")
		}
		if code != 0 {
			t.Fatalf("report %s: exit %d: %s", a, code, errs)
		}
		outputs["report "+a] = out
	}
	out, _, _ := whyslow(t, "sql", rec, "SELECT * FROM meta WHERE false", "--format", "json")
	outputs["sql"] = out
	// requests: a recording with socket calls, and none of them a request.
	reqRec := filepath.Join(dir, "req.db")
	if _, errs, code := whyslow(t, "record", "--requests", "-o", reqRec, "--", "true"); code != 0 {
		t.Fatalf("record --requests: exit %d: %s", code, errs)
	}
	out, errs, code := whyslow(t, "report", "requests", reqRec, "--json")
	if code != 0 {
		t.Fatalf("report requests: exit %d: %s", code, errs)
	}
	outputs["report requests"] = out
	for name, doc := range outputs {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		for _, p := range nulls(v, "") {
			if p != ".target.exit_code" { // a pointer: unknown for attach
				t.Errorf("%s: %s is null", name, p)
			}
		}
	}
	if !strings.Contains(string(runJSON), `"network": []`) {
		t.Errorf("run JSON lacks an empty network list:\n%s", runJSON)
	}
}

// nulls lists the paths of null values in a decoded JSON document.
func nulls(v any, path string) []string {
	switch x := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		var out []string
		for k, e := range x {
			out = append(out, nulls(e, path+"."+k)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, nulls(e, path+"[]")...)
		}
		return out
	}
	return nil
}

// TestAttachCaptureFailureExits1: a capture that cannot start (here, too few
// file descriptors for the maps) is exit 1, "capture failed", not a usage
// error; a pid that does not exist is exit 2.
func TestAttachCaptureFailureExits1(t *testing.T) {
	harness.RequireRoot(t)
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	// eBPF asked for: the capture's failure is the answer, in one line.
	cmd := exec.Command("sh", "-c", `ulimit -n 20; exec "$0" attach --sampler bpf -p "$1" -d 1s`,
		filepath.Join(bin, "whyslow"), strconv.Itoa(sleeper.Process.Pid))
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.HasPrefix(string(out), "whyslow: starting capture: ") || strings.Count(string(out), "\n") != 1 {
		t.Errorf("attach --sampler bpf with no fds left: %v, %q; want exit 1 and one line", err, out)
	}
	// Left to choose (issue 51), it samples /proc instead, and says so first.
	cmd = exec.Command("sh", "-c", `ulimit -n 20; exec "$0" attach -p "$1" -d 1s`,
		filepath.Join(bin, "whyslow"), strconv.Itoa(sleeper.Process.Pid))
	out, err = cmd.CombinedOutput()
	if first, _, _ := strings.Cut(string(out), "\n"); err != nil || !strings.HasPrefix(first, "whyslow: sampling /proc at 20 Hz, not tracing (eBPF cannot load: ") {
		t.Errorf("attach with no fds left: %v, %q; want the sampled capture, said in its first line", err, out)
	}
	if _, errs, code := whyslow(t, "attach", "-p", "999999999", "-d", "1s"); code != 2 {
		t.Errorf("attach to no process: exit %d (%s), want 2", code, errs)
	}
}
