package event

import "testing"

// Cgroup paths as Docker, Kubernetes (systemd and cgroupfs drivers),
// podman and systemd lay them out, and their short names.
func TestCgroupName(t *testing.T) {
	const id = "4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0"
	for path, want := range map[string]string{
		"/docker/" + id:                          "docker 4f1e2d3c4b5a",
		"/system.slice/docker-" + id + ".scope":  "docker 4f1e2d3c4b5a",
		"/machine.slice/libpod-" + id + ".scope": "libpod 4f1e2d3c4b5a",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0e6c8f4a_1b2c_4d5e_8f90_a1b2c3d4e5f6.slice/cri-containerd-" + id + ".scope": "pod 0e6c8f4a-1b2c-4d5e-8f90-a1b2c3d4e5f6, container 4f1e2d3c4b5a",
		"/kubepods/burstable/pod0e6c8f4a-1b2c-4d5e-8f90-a1b2c3d4e5f6/" + id:                                                                         "pod 0e6c8f4a-1b2c-4d5e-8f90-a1b2c3d4e5f6, container 4f1e2d3c4b5a",
		"/system.slice/nginx.service":                 "nginx.service",
		"/user.slice/user-1000.slice/session-3.scope": "session-3.scope",
		"/whyslow-quota-42":                           "/whyslow-quota-42",
		"/":                                           "/",
	} {
		if got := CgroupName(path); got != want {
			t.Errorf("CgroupName(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestCgroupIdentity(t *testing.T) {
	id := "4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0"
	for _, c := range []struct{ path, container, pod, unit string }{
		{"/system.slice/docker-" + id + ".scope", id, "", ""},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0e6c1f2a_3b4c_4d5e_8f90_a1b2c3d4e5f6.slice/cri-containerd-" + id + ".scope",
			id, "0e6c1f2a-3b4c-4d5e-8f90-a1b2c3d4e5f6", ""},
		{"/system.slice/nginx.service", "", "", "nginx.service"},
		{"/user.slice/user-0.slice/session-3.scope", "", "", ""},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/x.service", "", "", ""},
		{"/system.slice/nginx.service/child", "", "", ""},
		{"/", "", "", ""},
	} {
		container, pod, unit := CgroupIdentity(c.path)
		if container != c.container || pod != c.pod || unit != c.unit {
			t.Errorf("CgroupIdentity(%q) = %q, %q, %q; want %q, %q, %q", c.path, container, pod, unit, c.container, c.pod, c.unit)
		}
	}
}
