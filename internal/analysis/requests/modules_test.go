package requests

import "testing"

// TestModulesDocumented: every statement of sql/*.sql says what it is, and
// names each parameter it binds and each slot Go fills in its header.
func TestModulesDocumented(t *testing.T) {
	for _, e := range modules.Undocumented() {
		t.Error(e)
	}
}
