package analysis

import (
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

func TestStorageReasonsSQL(t *testing.T) {
	for _, r := range event.Reasons {
		if in := strings.Contains(storageReasonsSQL, "'"+string(r)+"'"); in != r.Disk() {
			t.Errorf("%s: in the storage list %v, Disk() %v", r, in, r.Disk())
		}
	}
}
