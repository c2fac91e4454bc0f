package sysinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A process's memory limit and refaults, as cgroup v1 and v2 lay them out.
func TestMemoryLimit(t *testing.T) {
	cases := []struct {
		name, cgroup string
		files        map[string]string
		want         MemoryLimit
		ok           bool
	}{
		{"v1, limited", "11:memory:/docker/4f1e\n0::/\n", map[string]string{
			"sys/fs/cgroup/memory/docker/4f1e/memory.limit_in_bytes": "67108864\n",
			"sys/fs/cgroup/memory/docker/4f1e/memory.stat":           "cache 1\nworkingset_refault_file 10\ntotal_workingset_refault_file 196608\n",
		}, MemoryLimit{Cgroup: "/docker/4f1e", Version: "v1", Dir: "/sys/fs/cgroup/memory/docker/4f1e", LimitBytes: 64 << 20, RefaultPages: 196608}, true},
		{"v1, no limit", "11:memory:/\n", map[string]string{
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.stat":           "workingset_refault_file 4132\n",
		}, MemoryLimit{Cgroup: "/", Version: "v1", Dir: "/sys/fs/cgroup/memory/", RefaultPages: 4132}, true},
		{"v2, a systemd unit with a high mark", "0::/system.slice/app.service\n", map[string]string{
			"sys/fs/cgroup/system.slice/app.service/memory.max":  "max\n",
			"sys/fs/cgroup/system.slice/app.service/memory.high": "134217728\n",
			"sys/fs/cgroup/system.slice/app.service/memory.stat": "anon 1\nworkingset_refault_anon 0\nworkingset_refault_file 77\n",
		}, MemoryLimit{Cgroup: "/system.slice/app.service", Version: "v2", Dir: "/sys/fs/cgroup/system.slice/app.service", HighBytes: 128 << 20, RefaultPages: 77}, true},
		{"no memory controller", "0::/user.slice\n", nil, MemoryLimit{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := processFixture(t, c.cgroup, c.files)
			got, ok := fs.MemoryLimit(42)
			if ok != c.ok || got != c.want {
				t.Errorf("MemoryLimit = %+v, %t; want %+v, %t", got, ok, c.want, c.ok)
			}
			if ok {
				if again, ok := fs.ReadMemoryLimit(got); !ok || again != got {
					t.Errorf("ReadMemoryLimit = %+v, %t; want %+v", again, ok, got)
				}
			}
		})
	}
}

// The controllers by hierarchy, as a hybrid host shows them (this
// project's machines: every controller on v1, hugetlb alone on v2).
func TestCgroupControllers(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.MkdirAll(filepath.Join(root, "sys/fs/cgroup/unified"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/cgroups"), []byte("#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nmemory\t4\t13\t1\nnet_cls\t0\t1\t1\nhugetlb\t0\t1\t1\nrdma\t9\t1\t0\n"), 0o644)
	os.WriteFile(filepath.Join(root, "sys/fs/cgroup/unified/cgroup.controllers"), []byte("hugetlb\n"), 0o644)
	v1, v2 := FS{Root: root}.CgroupControllers()
	if strings.Join(v1, ",") != "cpu,memory" || strings.Join(v2, ",") != "hugetlb" {
		t.Errorf("controllers on v1 %v, on v2 %v; want cpu,memory and hugetlb", v1, v2)
	}
}
