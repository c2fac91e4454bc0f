package capture

import (
	"fmt"
	"os"
	"testing"
)

// TestMain checks that the package's tests leave no file descriptor open:
// every link, map, ring buffer reader and program must be closed.
func TestMain(m *testing.M) {
	before := openFDs()
	code := m.Run()
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
