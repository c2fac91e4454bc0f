package explain

import (
	"testing"

	"github.com/whyslow/whyslow/internal/store"
)

// explainRecorded opens the recording at path, closed at the end of the
// test, and explains pid in it.
func explainRecorded(t *testing.T, path string, pid uint32) *Explanation {
	t.Helper()
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	x, err := Explain(NewSource(rec), pid)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return x
}
