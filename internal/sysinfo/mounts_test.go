package sysinfo

import "testing"

func TestRootMounts(t *testing.T) {
	got, err := fixture.RootMounts()
	if err != nil {
		t.Fatal(err)
	}
	for dev, want := range map[string]string{
		"254:0":  "/",
		"0:23":   "/dev/shm",
		"254:16": "/data", // not /srv/www, a subtree; not the later second mount
		"7:0":    "/var/tmp/slow",
		"8:1":    "", // not mounted
	} {
		if got[dev] != want {
			t.Errorf("RootMounts()[%q] = %q, want %q", dev, got[dev], want)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d devices, want 6: %v", len(got), got)
	}
	if _, err := (FS{Root: t.TempDir()}).RootMounts(); err == nil {
		t.Error("no mountinfo: want an error")
	}
}
