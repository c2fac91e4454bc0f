package analysis

import (
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// Every reason of the vocabulary has words in the verdict, and no word is
// kept for a reason that does not exist.
func TestReasonWordsCoverVocabulary(t *testing.T) {
	for _, r := range event.Reasons {
		if reasonWords[string(r)] == "" {
			t.Errorf("reason %q has no words", r)
		}
	}
	if len(reasonWords) != len(event.Reasons) {
		t.Errorf("%d reasons worded, %d in the vocabulary", len(reasonWords), len(event.Reasons))
	}
}

func TestStorageReasonsSQL(t *testing.T) {
	for _, r := range event.Reasons {
		if in := strings.Contains(storageReasonsSQL, "'"+string(r)+"'"); in != r.Disk() {
			t.Errorf("%s: in the storage list %v, Disk() %v", r, in, r.Disk())
		}
	}
}
