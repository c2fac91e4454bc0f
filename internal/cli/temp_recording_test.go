package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOrphanRecordingsRemoved: a temporary recording is named after its
// whyslow's pid, and making one removes those of whyslows that are gone
// (database, WAL, spill directory), not those of a live one nor other files.
func TestOrphanRecordingsRemoved(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone, live := dead.Process.Pid, os.Getppid()
	orphans := []string{
		fmt.Sprintf("whyslow-%d-123.db", gone), fmt.Sprintf("whyslow-%d-123.db.wal", gone),
		fmt.Sprintf("whyslow-%d-123.db.tmp", gone),
	}
	kept := []string{fmt.Sprintf("whyslow-%d-9.db", live), fmt.Sprintf("whyslow-%d-9.db.wal", live),
		"whyslow-4242.db", fmt.Sprintf("whyslow-%d-1.txt", gone), "notes.db"}
	for _, n := range append(orphans, kept...) {
		p := filepath.Join(dir, n)
		if strings.HasSuffix(n, ".tmp") {
			if err := os.MkdirAll(filepath.Join(p, "spill"), 0o700); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path, err := tempRecordingIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("whyslow-%d-", os.Getpid()); !strings.HasPrefix(filepath.Base(path), want) || !strings.HasSuffix(path, ".db") {
		t.Errorf("temporary recording %s, want %s*.db", path, want)
	}
	for _, n := range orphans {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s of a gone whyslow is still there (%v)", n, err)
		}
	}
	for _, n := range kept {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s was removed: %v", n, err)
		}
	}
}
