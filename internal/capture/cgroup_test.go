package capture

import "testing"

func TestParseCgroup(t *testing.T) {
	for in, want := range map[string]string{
		"0::/system.slice/nginx.service\n":                               "/system.slice/nginx.service",
		"12:cpu,cpuacct:/docker/3f2a9c\n1:name=systemd:/docker/3f2a9c\n": "/docker/3f2a9c",
		"4:memory:/\n3:cpu:/\n0::/\n":                                    "/",
		"":                                                               "/",
	} {
		if got := parseCgroup(in); got != want {
			t.Errorf("parseCgroup(%q) = %q, want %q", in, got, want)
		}
	}
}
