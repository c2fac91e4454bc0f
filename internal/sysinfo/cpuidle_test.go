package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCPUIdleAndWaited(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc/pressure"), 0o755)
	// user nice system idle iowait ..., in USER_HZ (100 a second)
	os.WriteFile(filepath.Join(root, "proc/stat"), []byte("cpu  100 0 50 1234 66 0 0 0 0 0\ncpu0 100 0 50 1234 66 0 0 0 0 0\n"), 0o644)
	os.WriteFile(filepath.Join(root, "proc/pressure/cpu"), []byte("some avg10=1.82 avg60=11.01 avg300=10.28 total=3287255049\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"), 0o644)
	fs := FS{Root: root}
	if idle, err := fs.CPUIdle(); err != nil || idle != 13*time.Second {
		t.Errorf("CPUIdle = %v, %v; want 13s (1234 + 66 ticks)", idle, err)
	}
	if waited, err := fs.CPUWaited(); err != nil || waited != 3287255049*time.Microsecond {
		t.Errorf("CPUWaited = %v, %v", waited, err)
	}
	if _, err := (FS{Root: t.TempDir()}).CPUWaited(); err == nil {
		t.Error("no /proc/pressure: want an error")
	}
}
