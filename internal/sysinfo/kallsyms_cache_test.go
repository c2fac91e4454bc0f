package sysinfo

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// kallsymsRoot is a machine with the fixture's symbols, a boot id and modules.
func kallsymsRoot(t *testing.T, boot, modules string) FS {
	t.Helper()
	root := t.TempDir()
	syms, err := os.ReadFile("testdata/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"proc/kallsyms": string(syms), "proc/sys/kernel/random/boot_id": boot, "proc/modules": modules,
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return FS{Root: root}
}

// TestCachedKallsyms: the copy is made at the first read and mapped at the
// next, with the same symbols; another boot or another set of modules
// reads /proc again.
func TestCachedKallsyms(t *testing.T) {
	fs := kallsymsRoot(t, "b1\n", "ext4 1000 1 - Live 0xffffffffc0a00000\n")
	dir := filepath.Join(t.TempDir(), "cache")
	want, err := fs.Kallsyms()
	if err != nil {
		t.Fatal(err)
	}
	wantAddrs, wantNames := symbols(want)
	for i := range 2 {
		k, err := fs.CachedKallsyms(dir)
		if err != nil {
			t.Fatal(err)
		}
		if addrs, names := symbols(k); !reflect.DeepEqual(addrs, wantAddrs) || !reflect.DeepEqual(names, wantNames) {
			t.Errorf("read %d: %x %v, want %x %v", i, addrs, names, wantAddrs, wantNames)
		}
		if got, want := k.Name(0xffffffff81c3a2c4), "schedule"; got != want {
			t.Errorf("read %d: Name = %q, want %q", i, got, want)
		}
		st, err := os.Stat(filepath.Join(dir, kallsymsFile))
		if err != nil {
			t.Fatalf("read %d: no copy: %v", i, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("the copy is mode %v, want 0600: it holds kernel addresses", st.Mode().Perm())
		}
	}
	key, _ := fs.kallsymsKey()
	if mapKallsyms(filepath.Join(dir, kallsymsFile), key) == nil {
		t.Error("the copy is not mapped")
	}
	for _, other := range []FS{
		kallsymsRoot(t, "b2\n", "ext4 1000 1 - Live 0xffffffffc0a00000\n"),
		kallsymsRoot(t, "b1\n", "ext4 1000 1 - Live 0xffffffffc0b00000\n"),
	} {
		key, _ := other.kallsymsKey()
		if mapKallsyms(filepath.Join(dir, kallsymsFile), key) != nil {
			t.Errorf("a copy of another boot or other modules is used (%s)", other.Root)
		}
	}
	os.Chmod(filepath.Join(dir, kallsymsFile), 0o666)
	if mapKallsyms(filepath.Join(dir, kallsymsFile), key) != nil {
		t.Error("a copy others could have written is used")
	}
}

// TestCachedKallsymsRange: the mapped copy finds a name by its index of
// names, as the table read from /proc does by reading them all.
func TestCachedKallsymsRange(t *testing.T) {
	fs := kallsymsRoot(t, "b1\n", "")
	dir := filepath.Join(t.TempDir(), "cache")
	read, err := fs.Kallsyms()
	if err != nil {
		t.Fatal(err)
	}
	fs.CachedKallsyms(dir) // makes the copy
	mapped, err := fs.CachedKallsyms(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mapped.byName == nil {
		t.Fatal("the mapped copy has no index of names")
	}
	for _, name := range []string{"schedule", "io_schedule", "_stext", "ext4_sync_file", "nvme_queue_rq", "missing"} {
		lo, hi, ok := read.Range(name)
		mlo, mhi, mok := mapped.Range(name)
		if lo != mlo || hi != mhi || ok != mok {
			t.Errorf("Range(%q): %#x-%#x %v from the copy, %#x-%#x %v from /proc", name, mlo, mhi, mok, lo, hi, ok)
		}
	}
}
