package baseline

import (
	"path/filepath"
	"testing"

	"github.com/whyslow/whyslow/internal/sysinfo"
)

func TestKeptAndCarried(t *testing.T) {
	path := filepath.Join(t.TempDir(), "whyslow", "baselines.json")
	vda := sysinfo.BlockDevice{Name: "vda", Model: "QEMU", Serial: "disk-1"}
	loop := sysinfo.BlockDevice{Name: "loop0", Backing: "/var/tmp/a.img"}
	if err := Save(path, Key(vda), Result{Device: "vda", SeqReadBPS: 100e6, SeqWriteBPS: 50e6}); err != nil {
		t.Fatal(err)
	}
	// A read-only measurement keeps the write throughput measured before.
	if err := Save(path, Key(vda), Result{Device: "vda", SeqReadBPS: 120e6}); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, Key(loop), Result{Device: "loop0", SeqReadBPS: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	kept, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// vda renamed vdb keeps its baseline (same serial); loop0 over another
	// file is another device.
	vdb := vda
	vdb.Name = "vdb"
	other := loop
	other.Backing = "/var/tmp/b.img"
	m := Meta([]sysinfo.BlockDevice{vdb, other, loop}, kept)
	if r, w, ok := FromMeta(m, "vdb"); !ok || r != 120e6 || w != 50e6 {
		t.Errorf("vdb: %d %d %v from %v", r, w, ok, m)
	}
	if r, _, ok := FromMeta(m, "loop0"); !ok || r != 8<<20 {
		t.Errorf("loop0: %d %v from %v", r, ok, m)
	}
	if len(m) != 2 {
		t.Errorf("meta %v: the loop over another file has no baseline", m)
	}
	if _, _, ok := FromMeta(map[string]string{"baseline:x": "12"}, "x"); ok {
		t.Error("a damaged value read")
	}
	if kept, err := Load(filepath.Join(t.TempDir(), "none.json")); err != nil || len(kept) != 0 {
		t.Errorf("a missing file: %v %v", kept, err)
	}
}
