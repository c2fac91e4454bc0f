package sysinfo

import "testing"

// TestThreadsIO reads each thread's own accounting, and leaves out a process
// that has none to read.
func TestThreadsIO(t *testing.T) {
	got := FS{Root: "testdata"}.ThreadsIO([]int{400, 999})
	if len(got) != 2 {
		t.Fatalf("%d threads, want the two of pid 400: %+v", len(got), got)
	}
	a, b := got[0], got[1]
	if a.PID != 400 || a.TID != 400 || a.Comm != "worker400" || a.RChar != 4000 || a.WChar != 2048 || a.SyscR != 3 || a.SyscW != 4 ||
		a.ReadBytes != 4096 || a.WriteBytes != 8192 || b.TID != 401 || b.RChar != 4010 {
		t.Errorf("threads %+v", got)
	}
}
