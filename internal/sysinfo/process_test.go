package sysinfo

import (
	"reflect"
	"testing"
	"time"
)

// testdata/proc is a small machine: systemd (1) started postgres (100) and
// bash (200); postgres has a walwriter (101) and a worker (102) that has a
// child of its own (300); bash runs psql (201).
var fixture = FS{Root: "testdata"}

func TestComm(t *testing.T) {
	if got := fixture.Comm(101); got != "postgres: walwriter" {
		t.Errorf("Comm(101) = %q", got)
	}
	if got := fixture.Comm(999); got != "" {
		t.Errorf("a gone process is named %q", got)
	}
}

func TestProcCPUTime(t *testing.T) {
	user, sys, ok := fixture.ProcCPUTime(100)
	// utime 250 + cutime 30 ticks, stime 75 + cstime 5, at 100 ticks a second.
	if !ok || user != 2800*time.Millisecond || sys != 800*time.Millisecond {
		t.Errorf("ProcCPUTime(100) = %v %v %v", user, sys, ok)
	}
	if _, _, ok := fixture.ProcCPUTime(999); ok {
		t.Error("a gone process has CPU time")
	}
}

func TestDescendants(t *testing.T) {
	if got, want := fixture.Descendants(100), []int{101, 102, 300}; !reflect.DeepEqual(got, want) {
		t.Errorf("Descendants(100) = %v, want %v", got, want)
	}
	if got := fixture.Descendants(201); got != nil {
		t.Errorf("a leaf has descendants %v", got)
	}
	if got := (FS{Root: t.TempDir()}).Descendants(1); got != nil {
		t.Errorf("no /proc, descendants %v", got)
	}
}

func TestDirtyBytes(t *testing.T) {
	if got := fixture.DirtyBytes(); got != (20480+4096)*1024 {
		t.Errorf("DirtyBytes = %d", got)
	}
	if got := (FS{Root: t.TempDir()}).DirtyBytes(); got != 0 {
		t.Errorf("no meminfo, DirtyBytes = %d", got)
	}
}

func TestCgroup(t *testing.T) {
	for pid, want := range map[uint32]string{
		100: "/system.slice/postgresql.service", // cgroup v2
		200: "/docker/3f2a9c",                   // v1: the cpu hierarchy's
		1:   "/",
		999: "", // gone
	} {
		if got := fixture.Cgroup(pid); got != want {
			t.Errorf("Cgroup(%d) = %q, want %q", pid, got, want)
		}
	}
}
