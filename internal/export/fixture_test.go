package export

import (
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest/hostile"
)

// fixture builds the storetest recording and opens it for analysis.
func fixture(t *testing.T) (string, *explain.Source) {
	t.Helper()
	path := hostile.Build(t, t.TempDir())
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return path, explain.NewSource(rec)
}
