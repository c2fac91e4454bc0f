package capture

import (
	"fmt"
	"os"
	"testing"

	"github.com/whyslow/whyslow/test/harness"
)

// TestMain checks that the package's tests leave no file descriptor open:
// every link, map, ring buffer reader and program must be closed. Without
// root it says how many tests it skipped.
func TestMain(m *testing.M) {
	before := openFDs()
	code := m.Run()
	harness.ReportSkipped()
	if after := openFDs(); code == 0 && after > before {
		fmt.Fprintf(os.Stderr, "leaked %d file descriptors (%d before, %d after)\n", after-before, before, after)
		code = 1
	}
	os.Exit(code)
}

func openFDs() int {
	entries, _ := os.ReadDir("/proc/self/fd")
	return len(entries)
}
