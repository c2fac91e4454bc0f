package capture

import (
	"testing"

	"github.com/whyslow/whyslow/test/harness"
)

func requirePrivileges(t testing.TB) { harness.RequireRoot(t) }
