package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBlockDevices(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(s), 0o644)
	}
	write("sys/class/block/vda/dev", "253:0\n")
	write("sys/class/block/vda/serial", "disk-1234\n")
	write("sys/class/block/sdb/device/model", "WDC WD1002FAEX  \n")
	write("sys/class/block/sdb/device/serial", "\n")
	write("sys/class/block/sdb/device/wwid", "naa.50014ee2\n")
	write("sys/class/block/loop0/dev", "7:0\n")
	write("sys/class/block/loop0/loop/backing_file", "/var/tmp/slow.img\n")
	write("var/tmp/slow.img", "x")
	write("sys/class/block/sdb/dev", "8:16\n")
	write("sys/class/block/sdb/holders/dm-0", "")
	write("sys/class/block/bad/dev", "garbage\n")
	write("sys/fs/cgroup/blkio/blkio.throttle.write_bps_device", "7:0 1048576\n")
	write("sys/fs/cgroup/blkio/blkio.throttle.read_bps_device", "7:0 2097152\n8:16 x\n")
	got := map[string]BlockDevice{}
	for _, d := range (FS{Root: root}).BlockDevices() {
		got[d.Name] = d
	}
	if len(got) != 3 {
		t.Fatalf("devices %v, want vda, loop0, sdb", got)
	}
	if d := got["vda"]; d.Dev != 253<<20 || d.Lower || d.Backing != "" || d.ThrottleWriteBPS != 0 || d.Serial != "disk-1234" || d.Model != "" {
		t.Errorf("vda: %+v", d)
	}
	if d := got["loop0"]; d.Dev != 7<<20 || d.Backing != "/var/tmp/slow.img" || d.BackingIno == 0 ||
		d.ThrottleWriteBPS != 1048576 || d.ThrottleReadBPS != 2097152 {
		t.Errorf("loop0: %+v", d)
	}
	// An empty serial falls back to the wwid.
	if d := got["sdb"]; d.Dev != 8<<20|16 || !d.Lower || d.ThrottleReadBPS != 0 || d.Model != "WDC WD1002FAEX" || d.Serial != "naa.50014ee2" {
		t.Errorf("sdb: %+v", d)
	}
}
