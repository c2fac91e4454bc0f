package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/whyslow/whyslow/internal/store"
)

// TestBadFileExitCodes: a file that is not a recording and one DuckDB will
// not open (locked, newer DuckDB) both exit 3 (docs/exit-codes.md).
func TestBadFileExitCodes(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("x.db: %w", store.ErrNotRecording),
		fmt.Errorf("x.db: %w: IO Error: Could not set lock on file", store.ErrUnreadable),
	} {
		if got := codeOf(err); got != ExitBadFile {
			t.Errorf("%v: exit %d, want %d", err, got, ExitBadFile)
		}
	}
	if codeOf(errors.New("other")) != ExitError {
		t.Error("an unknown error must exit 1")
	}
}
