package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

// processFixture is a root holding process 42, in the cgroups its
// /proc/42/cgroup lists, and files: what the cgroup tests read.
func processFixture(t *testing.T, cgroup string, files map[string]string) FS {
	t.Helper()
	root := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/42/cgroup", cgroup)
	write("proc/42/stat", "42 (app) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n")
	for p, s := range files {
		write(p, s)
	}
	return FS{Root: root}
}
