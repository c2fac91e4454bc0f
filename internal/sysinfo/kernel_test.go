package sysinfo

import "testing"

func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"6.2.0", true},
		{"6.1.112-1-amd64", false},
		{"6.18.44-fc-v769", true},
		{"5.15.0-122-generic", false},
		{"7.0", true},
		{"6.2-rc1", true},
		{"", true},
		{"weird", true},
	} {
		if got := KernelAtLeast(c.release, MinKernel[0], MinKernel[1]); got != c.want {
			t.Errorf("KernelAtLeast(%q, 6, 2) = %v, want %v", c.release, got, c.want)
		}
	}
}

func TestKernelSymbolsVisible(t *testing.T) {
	// The fixture's addresses are real ones.
	if !(FS{Root: "testdata"}).KernelSymbolsVisible() {
		t.Error("testdata/proc/kallsyms has addresses: want visible")
	}
	if (FS{Root: t.TempDir()}).KernelSymbolsVisible() {
		t.Error("no /proc/kallsyms: want not visible")
	}
}

func TestPIDMax(t *testing.T) {
	for _, c := range []struct {
		file string
		want uint32
	}{
		{"32768\n", 32768},
		{"4194304\n", 4194304},
		{"", 0},
		{"lots\n", 0},
	} {
		fs := processFixture(t, "", map[string]string{"proc/sys/kernel/pid_max": c.file})
		if got := fs.PIDMax(); got != c.want {
			t.Errorf("pid_max %q: PIDMax() = %d, want %d", c.file, got, c.want)
		}
	}
	if got := (FS{Root: t.TempDir()}).PIDMax(); got != 0 {
		t.Errorf("no pid_max: PIDMax() = %d, want 0", got)
	}
}
