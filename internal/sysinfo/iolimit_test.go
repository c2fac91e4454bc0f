package sysinfo

import (
	"reflect"
	"testing"
)

// A process's own cgroup's I/O limits, as v1's blkio throttle files and v2's
// io.max give them; none for a process in the root cgroup.
func TestIOLimits(t *testing.T) {
	cases := []struct {
		name, cgroup string
		files        map[string]string
		want         []IOLimit
	}{
		{"v1 blkio", "7:blkio:/batch\n0::/\n", map[string]string{
			"sys/fs/cgroup/blkio/batch/blkio.throttle.read_bps_device":   "7:3 8388608\n",
			"sys/fs/cgroup/blkio/batch/blkio.throttle.write_bps_device":  "7:3 4194304\n253:0 1048576\n",
			"sys/fs/cgroup/blkio/batch/blkio.throttle.read_iops_device":  "",
			"sys/fs/cgroup/blkio/batch/blkio.throttle.write_iops_device": "",
		}, []IOLimit{{Cgroup: "/batch", Version: "v1", Dev: 7<<20 | 3, ReadBPS: 8 << 20, WriteBPS: 4 << 20},
			{Cgroup: "/batch", Version: "v1", Dev: 253 << 20, WriteBPS: 1 << 20}}},
		{"v2 io.max", "0::/system.slice/backup.service\n", map[string]string{
			"sys/fs/cgroup/system.slice/backup.service/io.max": "8:0 rbps=max wbps=2097152 riops=max wiops=120\n8:16 rbps=max wbps=max riops=max wiops=max\n",
		}, []IOLimit{{Cgroup: "/system.slice/backup.service", Version: "v2", Dev: 8 << 20, WriteBPS: 2 << 20, WriteIOPS: 120}}},
		{"the root cgroup", "7:blkio:/\n0::/\n", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := processFixture(t, c.cgroup, c.files)
			if got := fs.IOLimits(42); !reflect.DeepEqual(got, c.want) {
				t.Errorf("IOLimits = %+v, want %+v", got, c.want)
			}
		})
	}
}
