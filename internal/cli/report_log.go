package cli

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/output"
)

// newLogReport is `report log`: every recorded operation in time order.
func newLogReport() *cobra.Command {
	var logLimit int
	var logFormat string
	return analysisCommand("log", "Every recorded operation in time order (iolog)",
		func(c *cobra.Command) {
			c.Flags().IntVar(&logLimit, "max-rows", 0, "stop after this many rows (0: all)")
			c.Flags().StringVar(&logFormat, "format", "text", "text (a table), csv (a header row, then one row per operation) or json (one object per line); --json is one document instead")
			c.Long = `Every recorded operation in time order, written as it is read: a whole
recording printed to a pipe streams at millions of rows a second, and
'| head' returns at once. --format csv and json (one object per line) are for
scripts; --json is the whole result as one document (it holds every row in
memory: use --format json for a large recording).`
		},
		func(w io.Writer, s *explain.Source, f source.Filter, ff *filterFlags, _ *cobra.Command) error {
			if ff.json {
				ops, err := reports.RunLog(s.Source, f, logLimit)
				if err != nil {
					return err
				}
				return writeJSON(w, withLost(s, ops))
			}
			if !slices.Contains(output.LogFormats, logFormat) {
				return usageErr("unknown --format %q: text, csv or json", logFormat)
			}
			var lw *output.LogWriter
			err := reports.StreamLog(s.Source, f, logLimit, func(o *reports.Op) error {
				if lw == nil { // the first row: the note and heading go out with it
					if logFormat == "text" {
						levelNote(w, s, "log")
					}
					var err error
					if lw, err = output.NewLogWriter(w, "I/O operations log", logFormat, ff.utc); err != nil {
						return err
					}
				}
				return lw.Op(o)
			})
			if err == nil && lw == nil && logFormat == "text" {
				levelNote(w, s, "log")
				_, err = output.NewLogWriter(w, "I/O operations log", logFormat, ff.utc)
				fmt.Fprintln(w, "(no operation recorded here)")
			}
			return err
		})
}
