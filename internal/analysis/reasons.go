package analysis

import (
	"strings"

	"github.com/whyslow/whyslow/internal/event"
)

// storageReasonsSQL is the SQL list of the reasons that are waits on storage
// (event.Reason.Disk), for `reason IN (...)`.
var storageReasonsSQL = reasonList(event.Reason.Disk)

// reasonList quotes, in report order, the reasons keep accepts. Reasons are
// our own fixed words, never input, so quoting them into SQL is safe.
func reasonList(keep func(event.Reason) bool) string {
	var q []string
	for _, r := range event.Reasons {
		if keep(r) {
			q = append(q, "'"+string(r)+"'")
		}
	}
	return strings.Join(q, ",")
}

// reasonSet is the set of the reasons keep accepts, by name.
func reasonSet(keep func(event.Reason) bool) map[string]bool {
	out := map[string]bool{}
	for _, r := range event.Reasons {
		if keep(r) {
			out[string(r)] = true
		}
	}
	return out
}
