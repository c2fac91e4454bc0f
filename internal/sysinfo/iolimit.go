package sysinfo

import (
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// IOLimit is a cgroup's own I/O limits on one block device: v1's
// blkio.throttle.* files, v2's io.max line. 0: no limit of that kind.
type IOLimit struct {
	Cgroup                                 string
	Version                                string
	Dev                                    uint32 // kernel dev_t (MAJOR << 20 | MINOR), as block events give it
	ReadBPS, WriteBPS, ReadIOPS, WriteIOPS uint64
}

// IOLimits reads the I/O limits of process pid's own cgroup (not the
// root's: the devices table has those), one per device limited: v1's blkio
// hierarchy, else the unified one's io.max. Empty when it has none.
func (fs FS) IOLimits(pid uint32) []IOLimit {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return nil
	}
	p, err := pfs.Proc(int(pid))
	if err != nil {
		return nil
	}
	groups, err := p.Cgroups()
	if err != nil {
		return nil
	}
	for _, g := range groups {
		if g.Path == "/" {
			continue
		}
		for _, c := range g.Controllers {
			if c == "blkio" {
				return fs.ioLimitsV1(g.Path)
			}
		}
		if g.HierarchyID == 0 {
			for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if b, err := os.ReadFile(fs.path(mount + g.Path + "/io.max")); err == nil {
					return parseIOMax(g.Path, string(b))
				}
			}
		}
	}
	return nil
}

func (fs FS) ioLimitsV1(cgroup string) []IOLimit {
	byDev := map[uint32]*IOLimit{}
	var order []uint32
	for _, f := range []string{"read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device"} {
		b, _ := os.ReadFile(fs.path("/sys/fs/cgroup/blkio" + cgroup + "/blkio.throttle." + f))
		for _, line := range strings.Split(string(b), "\n") {
			majmin, v, ok := strings.Cut(strings.TrimSpace(line), " ")
			n, err := strconv.ParseUint(v, 10, 64)
			dev, okDev := parseMajMin(majmin)
			if !ok || err != nil || !okDev {
				continue
			}
			l := byDev[dev]
			if l == nil {
				l = &IOLimit{Cgroup: cgroup, Version: "v1", Dev: dev}
				byDev[dev] = l
				order = append(order, dev)
			}
			switch f {
			case "read_bps_device":
				l.ReadBPS = n
			case "write_bps_device":
				l.WriteBPS = n
			case "read_iops_device":
				l.ReadIOPS = n
			case "write_iops_device":
				l.WriteIOPS = n
			}
		}
	}
	var out []IOLimit
	for _, d := range order {
		out = append(out, *byDev[d])
	}
	return out
}

// parseIOMax reads v2's io.max: "MAJ:MIN rbps=N wbps=N riops=max wiops=max".
func parseIOMax(cgroup, s string) []IOLimit {
	var out []IOLimit
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		dev, ok := parseMajMin(f[0])
		if !ok {
			continue
		}
		l := IOLimit{Cgroup: cgroup, Version: "v2", Dev: dev}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil { // "max"
				continue
			}
			switch k {
			case "rbps":
				l.ReadBPS = n
			case "wbps":
				l.WriteBPS = n
			case "riops":
				l.ReadIOPS = n
			case "wiops":
				l.WriteIOPS = n
			}
		}
		if l.ReadBPS+l.WriteBPS+l.ReadIOPS+l.WriteIOPS > 0 {
			out = append(out, l)
		}
	}
	return out
}

func parseMajMin(s string) (uint32, bool) {
	maj, min, ok := strings.Cut(s, ":")
	ma, err1 := strconv.ParseUint(maj, 10, 32)
	mi, err2 := strconv.ParseUint(min, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, false
	}
	return uint32(ma<<20 | mi), true
}
