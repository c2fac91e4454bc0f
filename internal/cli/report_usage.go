package cli

import (
	"io"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/output"
)

// newUsageReport is `report usage`: who read and wrote how much.
func newUsageReport() *cobra.Command {
	return analysisCommand("usage", "Who read and wrote how much: per process, per file, block I/O, network (iousagetop)", nil,
		func(w io.Writer, s *explain.Source, f source.Filter, ff *filterFlags, _ *cobra.Command) error {
			u, err := reports.RunUsage(s.Source, f)
			if err != nil {
				return err
			}
			if ff.json {
				return writeJSON(w, withLost(s, u))
			}
			output.Usage(w, u) // says itself what the default level shows of it
			return nil
		})
}
