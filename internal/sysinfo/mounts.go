package sysinfo

import "github.com/prometheus/procfs"

// RootMounts maps each mounted filesystem's device ("major:minor") to where
// its root is mounted, from /proc/self/mountinfo: a path the kernel gives
// relative to a filesystem is completed with it.
func (fs FS) RootMounts() (map[string]string, error) {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return nil, err
	}
	infos, err := pfs.GetMounts()
	if err != nil {
		return nil, err
	}
	return rootMounts(infos), nil
}

// rootMounts keeps, per device, the first mount of the filesystem's root.
func rootMounts(infos []*procfs.MountInfo) map[string]string {
	out := make(map[string]string)
	for _, m := range infos {
		if m.Root != "/" {
			continue // bind mount of a subtree: a path under it would be wrong
		}
		if _, ok := out[m.MajorMinorVer]; !ok {
			out[m.MajorMinorVer] = m.MountPoint
		}
	}
	return out
}
