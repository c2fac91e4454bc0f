package cli

import (
	"bytes"
	"testing"

	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestExportOTLPExitCodes: bad flags exit 2 before the recording is read,
// an endpoint that refuses exits 1, a file that is no recording 3
// (docs/exit-codes.md).
func TestExportOTLPExitCodes(t *testing.T) {
	var rec string
	for _, s := range storetest.Stories {
		if s.Name == "slow-request" {
			rec = s.Record(t)
		}
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{rec}, ExitUsage},
		{[]string{rec, "--endpoint", "localhost:4318"}, ExitUsage},
		{[]string{rec, "--endpoint", "http://127.0.0.1:1/x", "--protocol", "grpc"}, ExitUsage},
		{[]string{rec, "--endpoint", "http://127.0.0.1:1", "--protocol", "json"}, ExitUsage},
		{[]string{rec, "--endpoint", "http://127.0.0.1:1", "--header", "x"}, ExitUsage},
		{[]string{rec, "--endpoint", "http://127.0.0.1:1", "--pid", "1", "--critical-path"}, ExitUsage},
		{[]string{rec, "--endpoint", "http://127.0.0.1:1"}, ExitError},
		{[]string{rec + ".none", "--endpoint", "http://127.0.0.1:1"}, ExitBadFile},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(append([]string{"export", "otlp"}, c.args...))
		err := root.Execute()
		if got := codeOf(err); got != c.code {
			t.Errorf("export otlp %v: exit %d (%v), want %d", c.args[1:], got, err, c.code)
		}
	}
}
