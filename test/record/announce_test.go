package record

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// TestRecorderSaysWhenRecording: record and attach (without a command) say
// once capture is attached what they record, and until when; what starts
// after that line is in the recording.
func TestRecorderSaysWhenRecording(t *testing.T) {
	harness.RequireRoot(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.db")
	cmd := exec.Command(filepath.Join(bin, "whyslow"), "record", "-o", rec, "-d", "30s")
	out := harness.StartRecorder(t, cmd)
	// Started after the line: its whole life is recorded.
	marker := filepath.Join(dir, "after-the-line")
	if err := exec.Command("sh", "-c", "echo x > "+marker).Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(line, "whyslow: recording system-wide to ") || !strings.HasSuffix(line, " for 30s, or until Ctrl-C") {
		t.Errorf("first line %q, want what is recorded and until when", line)
	}
	got, errs, code := whyslow(t, "sql", rec, "SELECT count(*) FROM execs WHERE array_to_string(args, ' ') LIKE '%after-the-line%'", "--format", "csv")
	if code != 0 {
		t.Fatalf("sql: exit %d: %s", code, errs)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(got, "count_star()\n"))); n < 1 {
		t.Errorf("the shell started after the line is not in the recording: %q", got)
	}

	// attach -p: the process, its descendants, until it exits.
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	att := exec.Command(filepath.Join(bin, "whyslow"), "attach", "-p", strconv.Itoa(sleeper.Process.Pid), "-d", "1s")
	out = harness.StartRecorder(t, att)
	att.Wait()
	want := "whyslow: recording pid " + strconv.Itoa(sleeper.Process.Pid) + " and its descendants for 1s, or until it exits or Ctrl-C\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("attach said %q first, want %q", out.String(), want)
	}
}
