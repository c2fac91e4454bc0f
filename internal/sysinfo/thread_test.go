package sysinfo

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseSyscall(t *testing.T) {
	for _, tc := range []struct {
		in   string
		nr   int32
		args []uint64
	}{
		{"0 0x3 0x7ffd5a1c 0x100000 0x0 0x0 0x0 0x7ffd5a0 0x7f12\n", 0, []uint64{3, 0x7ffd5a1c, 0x100000, 0, 0, 0}},
		{"-1 0x7ffd5a0 0x7f12\n", -1, nil},
		{"running\n", -1, nil},
		{"", -1, nil},
	} {
		nr, args := parseSyscall([]byte(tc.in))
		if nr != tc.nr || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("parseSyscall(%q) = %d %v, want %d %v", tc.in, nr, args, tc.nr, tc.args)
		}
	}
}

func TestParseStack(t *testing.T) {
	in := "[<0>] folio_wait_bit_common+0x13c/0x350\n[<0>] filemap_read+0x2d1/0x3c0\n[<0>] do_syscall_64+0x7e/0x170\n"
	want := []string{"folio_wait_bit_common", "filemap_read", "do_syscall_64"}
	if got := parseStack([]byte(in)); !reflect.DeepEqual(got, want) {
		t.Fatalf("parseStack = %v, want %v", got, want)
	}
}

func TestThreadsFromFixture(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(s), 0o644)
	}
	stat := func(pid, comm, state string) string {
		return pid + " (" + comm + ") " + state + " 1 42 42 0 -1 4194560 0 0 0 0 5 3 0 0 20 0 2 0 100 1000 10 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
	}
	write("proc/42/stat", stat("42", "reader", "S"))
	write("proc/42/task/42/stat", stat("42", "reader", "D"))
	write("proc/42/task/42/syscall", "0 0x7 0x1000 0x100000 0x0 0x0 0x0 0x1 0x2\n")
	write("proc/42/task/42/stack", "[<0>] folio_wait_bit_common+0x1/0x2\n[<0>] filemap_read+0x1/0x2\n")
	write("proc/42/task/43/stat", stat("43", "worker (x)", "S"))
	write("proc/42/task/43/syscall", "-1 0x1 0x2\n")
	write("data.bin", "x")
	os.MkdirAll(filepath.Join(root, "proc/42/fd"), 0o755)
	os.Symlink(filepath.Join(root, "data.bin"), filepath.Join(root, "proc/42/fd/7"))
	ths, err := (FS{Root: root}).Threads(42)
	if err != nil || len(ths) != 2 {
		t.Fatalf("Threads: %v, %v", ths, err)
	}
	byTID := map[uint32]Thread{}
	for _, th := range ths {
		byTID[th.TID] = th
	}
	r := byTID[42]
	if r.State != 'D' || r.Syscall != 0 || r.PPID != 1 || r.Comm != "reader" || len(r.Frames) != 2 ||
		r.File == nil || r.File.FD != 7 || r.File.Path != filepath.Join(root, "data.bin") || r.File.Ino == 0 {
		t.Errorf("thread 42: %+v (file %+v)", r, r.File)
	}
	if w := byTID[43]; w.State != 'S' || w.Syscall != -1 || w.Comm != "worker (x)" || w.File != nil {
		t.Errorf("thread 43: %+v", w)
	}
	if _, err := (FS{Root: root}).Threads(99); err == nil {
		t.Error("no such process: want an error")
	}
}

func TestThreadRunTime(t *testing.T) {
	fs := FS{Root: "testdata"}
	if ns, err := fs.ThreadRunTime(500, 501); err != nil || ns != 123456789 {
		t.Errorf("run time %d, %v; want 123456789 (schedstat's first field)", ns, err)
	}
	if _, err := fs.ThreadRunTime(500, 999); err == nil {
		t.Error("a thread with no schedstat gave no error")
	}
}
