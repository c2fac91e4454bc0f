package sysinfo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// BlockDevice is a block device as /sys describes it, with what it is
// stacked on and the blkio throttle set on it.
type BlockDevice struct {
	Dev  uint32 // kernel dev_t: major<<20 | minor
	Name string // vda, loop3, dm-0
	// Backing is the file a loop device reads and writes, and its identity
	// (kernel dev_t, inode): that file's requests on the device below are
	// this device's requests, seen twice.
	Backing    string
	BackingDev uint32
	BackingIno uint64
	// Lower: another device is stacked on this one (dm, md): its requests
	// carry the upper device's data.
	Lower bool
	// ThrottleReadBPS, ThrottleWriteBPS: the root blkio cgroup's limits, 0 for none.
	ThrottleReadBPS, ThrottleWriteBPS uint64
	// Model and Serial, where the kernel gives them (SCSI/SATA and NVMe
	// under device/, virtio's serial beside the disk); empty for a loop
	// device, a dm target, most partitions.
	Model, Serial string
}

// KernelDev converts a user-space dev_t (stat's st_dev) to the kernel's
// encoding, which BPF reports.
func KernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)
}

// BlockDevices lists /sys/class/block.
func (fs FS) BlockDevices() []BlockDevice {
	var out []BlockDevice
	entries, err := os.ReadDir(fs.path("/sys/class/block"))
	if err != nil {
		return out
	}
	limits := map[string][2]uint64{}
	for i, f := range []string{"read_bps_device", "write_bps_device"} {
		b, _ := os.ReadFile(fs.path("/sys/fs/cgroup/blkio/blkio.throttle." + f))
		for _, line := range strings.Split(string(b), "\n") {
			dev, v, ok := strings.Cut(strings.TrimSpace(line), " ")
			if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
				l := limits[dev]
				l[i] = n
				limits[dev] = l
			}
		}
	}
	for _, e := range entries {
		dir := fs.path(filepath.Join("/sys/class/block", e.Name()))
		b, err := os.ReadFile(filepath.Join(dir, "dev"))
		if err != nil {
			continue
		}
		majmin := strings.TrimSpace(string(b))
		maj, min, ok := strings.Cut(majmin, ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		d := BlockDevice{Dev: uint32(ma<<20 | mi), Name: e.Name()}
		d.ThrottleReadBPS, d.ThrottleWriteBPS = limits[majmin][0], limits[majmin][1]
		if b, err := os.ReadFile(filepath.Join(dir, "loop/backing_file")); err == nil {
			d.Backing = strings.TrimSpace(string(b))
			var st unix.Stat_t
			if unix.Stat(fs.path(d.Backing), &st) == nil {
				d.BackingDev, d.BackingIno = KernelDev(st.Dev), st.Ino
			}
		}
		d.Model = firstLine(dir, "device/model")
		d.Serial = firstLine(dir, "device/serial", "serial", "device/wwid", "wwid")
		if holders, err := os.ReadDir(filepath.Join(dir, "holders")); err == nil && len(holders) > 0 {
			d.Lower = true
		}
		out = append(out, d)
	}
	return out
}

// firstLine is the first of the files under dir that holds text, trimmed.
func firstLine(dir string, names ...string) string {
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err == nil {
			if v := strings.TrimSpace(string(b)); v != "" {
				return v
			}
		}
	}
	return ""
}
