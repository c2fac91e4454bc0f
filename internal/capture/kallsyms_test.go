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
	t.Logf("%d symbols in %v", k.Len(), time.Since(start))
	found := false
	for i := range k.Len() {
		if a, n := k.Symbol(i); n == "schedule" {
			found = k.Name(a+1) == "schedule"
		}
	}
	if !found {
		t.Fatal("schedule is not resolved from /proc/kallsyms")
	}
}
