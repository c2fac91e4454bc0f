package event

import (
	"regexp"
	"strings"
)

// The short names a cgroup path shows, as people know them: a container's
// id, a Kubernetes pod's uid, a systemd unit.
var (
	// docker (cgroupfs: /docker/ID; systemd: docker-ID.scope), containerd's
	// CRI (cri-containerd-ID.scope), CRI-O (crio-ID.scope), podman
	// (libpod-ID.scope): a 64-hex id, shown as its first 12 like `docker ps`.
	containerID = regexp.MustCompile(`(?:^|[/-])([0-9a-f]{64})(?:\.scope)?$`)
	// Kubernetes: kubepods-burstable-pod<uid>.slice (systemd, the uid's
	// dashes as underscores) or /kubepods/burstable/pod<uid> (cgroupfs).
	podUID = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
)

// CgroupName is a cgroup path's short name: "docker 4f1e2d3c4b5a" for a
// container, "pod 0e6c…" with the container's id for a Kubernetes pod, a
// systemd unit ("nginx.service"), else the path itself ("/" the root).
func CgroupName(path string) string {
	var parts []string
	if m := podUID.FindStringSubmatch(path); m != nil {
		parts = append(parts, "pod "+strings.ReplaceAll(m[1], "_", "-"))
	}
	if m := containerID.FindStringSubmatch(path); m != nil {
		runtime := "container"
		for _, r := range []string{"docker", "cri-containerd", "crio", "libpod"} {
			if strings.Contains(path, r) {
				runtime = r
				break
			}
		}
		if len(parts) > 0 {
			runtime = "container"
		}
		parts = append(parts, runtime+" "+m[1][:12])
	}
	if len(parts) > 0 {
		return strings.Join(parts, ", ")
	}
	last := path[strings.LastIndexByte(path, '/')+1:]
	for _, unit := range []string{".service", ".scope"} {
		if strings.HasSuffix(last, unit) {
			return last
		}
	}
	return path
}

// CgroupIdentity is what a cgroup path says of whom it holds: a container's
// full id, a Kubernetes pod's uid (dashed), and a system service's systemd
// unit ("nginx.service" under system.slice: not a user's session or
// manager, whose units name no service). Each "" when the path has none.
func CgroupIdentity(path string) (container, pod, unit string) {
	if m := containerID.FindStringSubmatch(path); m != nil {
		container = m[1]
	}
	if m := podUID.FindStringSubmatch(path); m != nil {
		pod = strings.ReplaceAll(m[1], "_", "-")
	}
	if rest, ok := strings.CutPrefix(path, "/system.slice/"); ok && strings.HasSuffix(rest, ".service") && !strings.Contains(rest, "/") {
		unit = rest
	}
	return container, pod, unit
}
