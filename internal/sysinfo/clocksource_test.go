package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSchedClockShared(t *testing.T) {
	for _, c := range []struct {
		current string
		want    bool
	}{
		{"tsc", true},
		{"kvm-clock", true},
		{"hpet", false},
		{"acpi_pm", false},
		{"", false},
	} {
		root := t.TempDir()
		if c.current != "" {
			dir := filepath.Join(root, "sys/devices/system/clocksource/clocksource0")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "available_clocksource"), []byte("tsc hpet acpi_pm\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "current_clocksource"), []byte(c.current+"\n"), 0o644)
		}
		if got := (FS{Root: root}).SchedClockShared(); got != c.want {
			t.Errorf("clock source %q: shared %v, want %v", c.current, got, c.want)
		}
	}
}
