package capture

import (
	"testing"
	"time"
)

// The kernel's own text symbols resolve: schedule is a function every kernel has.
func TestKallsymsNamesSchedule(t *testing.T) {
	requirePrivileges(t) // addresses in /proc/kallsyms are zero without CAP_SYSLOG
	start := time.Now()
	k := loadKallsyms()
	t.Logf("%d symbols in %v", len(k.Addrs), time.Since(start))
	found := false
	for i, n := range k.Names {
		if n == "schedule" {
			found = k.Name(k.Addrs[i]+1) == "schedule"
		}
	}
	if !found {
		t.Fatal("schedule is not resolved from /proc/kallsyms")
	}
}
