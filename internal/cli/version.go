package cli

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/duckdb/duckdb-go/v2/mapping"
	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/capture"
)

// Set at build time by the Makefile (-ldflags "-X .../cli.Version=..."):
// `make build` and `make dist` give the last tag's version, else
// 0.0.0-<date>-<commit>; the build date is the commit's time
// (SOURCE_DATE_EPOCH), so that two builds of one commit are the same bytes.
var (
	Version   = "dev"
	Commit    = ""
	BuildDate = ""
)

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go and DuckDB versions and the BPF object's digest",
		Long: `Prints what this binary is: its version, the commit and date it was built
from, the Go toolchain and DuckDB library linked in, and the SHA-256 of the
BPF object it loads. 'whyslow --version' prints the same.`,
		Example: `  whyslow version
  whyslow --version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			writeVersion(cmd.OutOrStdout())
			return nil
		},
	}
}

// versionInfo is what `whyslow version` prints under its first line, in order.
func versionInfo() [][2]string {
	commit, date := Commit, BuildDate
	if commit == "" { // a plain `go build`: the toolchain's VCS stamp, if any
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.time":
					date = s.Value
				}
			}
		}
	}
	return [][2]string{
		{"commit", cmp.Or(commit, "unknown")},
		{"build date", cmp.Or(date, "unknown")},
		{"go", runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH},
		{"duckdb", mapping.LibraryVersion()},
		{"bpf object", "sha256:" + capture.ObjectDigest()},
	}
}

func writeVersion(w io.Writer) { io.WriteString(w, versionText()) }

func versionText() string {
	var b strings.Builder
	b.WriteString("whyslow " + Version + "\n")
	for _, kv := range versionInfo() {
		fmt.Fprintf(&b, "%-11s %s\n", kv[0]+":", kv[1])
	}
	return b.String()
}
