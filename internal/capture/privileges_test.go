package capture

import (
	"os"
	"testing"
)

// requirePrivileges skips where capture cannot work, except in CI, where a
// missing capability is a failure: CI runs on machines that have it.
func requirePrivileges(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("capture tests need root (CAP_BPF, CAP_PERFMON); CI must provide it")
	}
	t.Skip("capture tests need root")
}
