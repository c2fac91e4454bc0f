package capture

import (
	"os"
	"path/filepath"
	"testing"
)

// Through the spool, every record arrives once and in a form the decoder
// knows, and the spool leaves no file behind.
func TestSpoolKeepsEveryEvent(t *testing.T) {
	dir, spoolDir := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "many.out")
	script := `
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
for _ in range(50000):
    os.write(fd, b"s")
os.close(fd)
`
	c := runCaptured(t, Options{Level: Full, SpoolDir: spoolDir}, python(t), "-c", script, file)
	c.noLoss(t)
	n := 0
	for _, s := range c.syscalls("write") {
		if c.path(s.File) == file && s.Ret == 1 {
			n++
		}
	}
	if n != 50000 {
		t.Errorf("%d writes of one byte to %s through the spool, want 50000", n, file)
	}
	if left, _ := os.ReadDir(spoolDir); len(left) != 0 {
		t.Errorf("the spool left %d files in %s", len(left), spoolDir)
	}
}
