package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEffectiveCaps(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   uint64
		trace  bool
	}{
		{"Name:\tx\nCapEff:\t000001ffffffffff\n", 0x1ffffffffff, true},
		{"Name:\tx\nCapEff:\t0000000000000000\n", 0, false},
		{"Name:\tx\nCapEff:\t000000c000000000\n", 0xc000000000, true},  // CAP_BPF + CAP_PERFMON only
		{"Name:\tx\nCapEff:\t0000008000000000\n", 0x8000000000, false}, // CAP_BPF alone
		{"Name:\tx\n", 0, false},                                       // no CapEff: no capabilities
	} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "proc/1"), 0o755)
		os.WriteFile(filepath.Join(root, "proc/1/status"), []byte(tc.status), 0o644)
		got, err := FS{Root: root}.EffectiveCaps("1")
		if err != nil || got != tc.want {
			t.Errorf("EffectiveCaps(%q) = %x, %v; want %x", tc.status, got, err, tc.want)
		}
		if CanTrace(got) != tc.trace {
			t.Errorf("CanTrace(%x) = %v, want %v", got, !tc.trace, tc.trace)
		}
	}
	if _, err := (FS{Root: t.TempDir()}).EffectiveCaps("1"); err == nil {
		t.Error("no such process: want an error")
	}
}

func TestFixtureRoot(t *testing.T) {
	root := t.TempDir()
	fs := FS{Root: root}
	if fs.HasBTF() || fs.HasPSI() || fs.DelayAccounting() != "absent" || fs.CgroupVersion() != "v1" {
		t.Fatal("an empty root must report nothing available")
	}
	os.MkdirAll(filepath.Join(root, "proc/sys/kernel"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/sys/kernel/task_delayacct"), []byte("1\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "sys/fs/cgroup"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers"), []byte("cpu io\n"), 0o644)
	if fs.DelayAccounting() != "on" || fs.CgroupVersion() != "v2" {
		t.Fatalf("delayacct %s, cgroup %s", fs.DelayAccounting(), fs.CgroupVersion())
	}
}
