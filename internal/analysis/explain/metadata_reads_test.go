package explain

import "testing"

// A thread's disk reads are the filesystem's metadata when most of their
// time was in calls that walk it (find: getdents64, newfstatat); a reader of
// file data (read, pread64) gets no such detail.
func TestMetadataRead(t *testing.T) {
	x := &Explanation{diskReads: diskReads{metadataBytes: 34 << 20, byTID: map[uint32][]CallWaits{
		1: {{Syscall: "read", Waits: 2, S: 0.001}, {Syscall: "getdents64", Waits: 4222, S: 0.2}, {Syscall: "newfstatat", Waits: 143, S: 0.02},
			{Syscall: "openat", Waits: 3, S: 0.0002}, {Syscall: "statx", Waits: 1, S: 0.0001}},
		2: {{Syscall: "read", Waits: 100, S: 1}, {Syscall: "openat", Waits: 5, S: 0.1}},
	}}}
	m := x.metadataRead(1)
	if m == nil || m.Bytes != 34<<20 || len(m.Calls) != 3 || m.Calls[0].Syscall != "getdents64" || m.Calls[1].Syscall != "newfstatat" {
		t.Errorf("the tree walk: %+v", m)
	}
	if m := x.metadataRead(2); m != nil {
		t.Errorf("a reader of file data: %+v, want none", m)
	}
	if m := x.metadataRead(3); m != nil {
		t.Errorf("a thread with no disk read: %+v", m)
	}
}
