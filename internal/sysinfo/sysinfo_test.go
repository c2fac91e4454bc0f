package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseCapEff(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   uint64
		trace  bool
	}{
		{"Name:\tx\nCapEff:\t000001ffffffffff\n", 0x1ffffffffff, true},
		{"CapEff:\t0000000000000000\n", 0, false},
		{"CapEff:\t000000c000000000\n", 0xc000000000, true},  // CAP_BPF + CAP_PERFMON only
		{"CapEff:\t0000008000000000\n", 0x8000000000, false}, // CAP_BPF alone
	} {
		got, err := parseCapEff(tc.status)
		if err != nil || got != tc.want {
			t.Errorf("parseCapEff(%q) = %x, %v; want %x", tc.status, got, err, tc.want)
		}
		if CanTrace(got) != tc.trace {
			t.Errorf("CanTrace(%x) = %v, want %v", got, !tc.trace, tc.trace)
		}
	}
	if _, err := parseCapEff("Name: x\n"); err == nil {
		t.Error("no CapEff line: want an error")
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
