package cli

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/whyslow/whyslow/internal/capture"
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

// TestPermissionExitCodes: the kernel refusing the programs is a missing
// privilege (4); a file whyslow may not write is a failure like any other
// (1), not a reason to run 'whyslow check'.
func TestPermissionExitCodes(t *testing.T) {
	refused := fmt.Errorf("%w: loading programs: %w", capture.ErrNotPermitted, os.ErrPermission)
	if got := codeOf(refused); got != ExitNoCapture {
		t.Errorf("%v: exit %d, want %d", refused, got, ExitNoCapture)
	}
	unwritable := fmt.Errorf("writing /root/x.json: %w", os.ErrPermission)
	if got := codeOf(unwritable); got != ExitError {
		t.Errorf("%v: exit %d, want %d", unwritable, got, ExitError)
	}
}
