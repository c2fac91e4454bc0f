package critpath

import "github.com/whyslow/whyslow/internal/event"

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
