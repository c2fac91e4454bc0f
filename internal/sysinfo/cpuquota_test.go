package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
)

// A process's CPU quota, read as the kernel lays it out: cgroup v1's cpu
// hierarchy (a Docker container under cpu,cpuacct), and the unified
// hierarchy (v2) as systemd and Kubernetes lay it out, with an unlimited
// cgroup and one without a cpu controller.
func TestCPUQuota(t *testing.T) {
	cases := []struct {
		name, cgroup string
		files        map[string]string
		want         CPUQuota
		ok           bool
	}{
		{"docker on v1", "12:cpu,cpuacct:/docker/4f1e2d\n11:memory:/docker/4f1e2d\n0::/\n", map[string]string{
			"sys/fs/cgroup/cpu,cpuacct/docker/4f1e2d/cpu.cfs_quota_us":  "20000\n",
			"sys/fs/cgroup/cpu,cpuacct/docker/4f1e2d/cpu.cfs_period_us": "100000\n",
			"sys/fs/cgroup/cpu,cpuacct/docker/4f1e2d/cpu.stat":          "nr_periods 32\nnr_throttled 26\nthrottled_time 1847055149\nnr_bursts 0\nburst_time 0\n",
		}, CPUQuota{Cgroup: "/docker/4f1e2d", Version: "v1", Dir: "/sys/fs/cgroup/cpu,cpuacct/docker/4f1e2d", QuotaUS: 20000, PeriodUS: 100000, Periods: 32, Throttled: 26, ThrottledNS: 1847055149}, true},
		{"systemd unit on v2", "0::/system.slice/nginx.service\n", map[string]string{
			"sys/fs/cgroup/system.slice/nginx.service/cpu.max":  "50000 100000\n",
			"sys/fs/cgroup/system.slice/nginx.service/cpu.stat": "usage_usec 8000\nuser_usec 6000\nsystem_usec 2000\nnr_periods 10\nnr_throttled 4\nthrottled_usec 120000\n",
		}, CPUQuota{Cgroup: "/system.slice/nginx.service", Version: "v2", Dir: "/sys/fs/cgroup/system.slice/nginx.service", QuotaUS: 50000, PeriodUS: 100000, Periods: 10, Throttled: 4, ThrottledNS: 120000000}, true},
		{"kubernetes pod, no limit", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9c1.slice/cri-containerd-ab12.scope\n", map[string]string{
			"sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9c1.slice/cri-containerd-ab12.scope/cpu.max":  "max 100000\n",
			"sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9c1.slice/cri-containerd-ab12.scope/cpu.stat": "usage_usec 1\n",
		}, CPUQuota{Cgroup: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9c1.slice/cri-containerd-ab12.scope", Version: "v2",
			Dir: "/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9c1.slice/cri-containerd-ab12.scope", QuotaUS: -1, PeriodUS: 100000}, true},
		{"no cpu controller files", "0::/user.slice\n", nil, CPUQuota{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := processFixture(t, c.cgroup, c.files)
			got, ok := fs.CPUQuota(42)
			if ok != c.ok || got != c.want {
				t.Errorf("CPUQuota = %+v, %t; want %+v, %t", got, ok, c.want, c.ok)
			}
			if !ok {
				return
			}
			// The process gone, its cgroup is read again where it was.
			os.RemoveAll(filepath.Join(fs.Root, "proc"))
			if again, ok := fs.ReadCPUQuota(got); !ok || again != got {
				t.Errorf("ReadCPUQuota = %+v, %t; want %+v", again, ok, got)
			}
		})
	}
	if (CPUQuota{QuotaUS: 20000, PeriodUS: 100000}).CPUs() != 0.2 || (CPUQuota{QuotaUS: -1, PeriodUS: 100000}).CPUs() != 0 {
		t.Error("CPUs: 20000/100000 is 0.2 CPU, and no quota none")
	}
}
