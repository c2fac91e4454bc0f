package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/output"
)

// newStatsReport is `report stats`: latency statistics per class and disk.
func newStatsReport() *cobra.Command {
	return analysisCommand("stats", "Latency statistics per syscall class and per disk (iolatencystats)", nil,
		func(w io.Writer, s *explain.Source, f source.Filter, ff *filterFlags, _ *cobra.Command) error {
			st, err := reports.RunStats(s.Source, f)
			if err != nil {
				return err
			}
			if ff.json {
				return writeJSON(w, withLost(s, st))
			}
			levelNote(w, s, "stats")
			output.Stats(w, st)
			return nil
		})
}

// newFreqReport is `report freq`: latency histograms per class.
func newFreqReport() *cobra.Command {
	var resolution int
	return analysisCommand("freq", "Latency histograms per syscall class (iolatencyfreq)",
		func(c *cobra.Command) {
			c.Flags().IntVar(&resolution, "freq-resolution", 20, "number of buckets between --min and --max")
		},
		func(w io.Writer, s *explain.Source, f source.Filter, ff *filterFlags, _ *cobra.Command) error {
			// Only the resolution is a usage error; any other is the
			// recording's: a damaged file exits 3 (docs/exit-codes.md).
			fr, err := reports.RunFreq(s.Source, f, resolution)
			if errors.Is(err, reports.ErrFreqResolution) {
				return usageErr("%v", err)
			} else if err != nil {
				return err
			}
			if ff.json {
				return writeJSON(w, withLost(s, fr))
			}
			levelNote(w, s, "freq")
			output.Freq(w, fr)
			return nil
		})
}

// newTopReport is `report top`: the slowest operations per class.
func newTopReport() *cobra.Command {
	return analysisCommand("top", "The slowest operations per syscall class (iolatencytop)", nil,
		func(w io.Writer, s *explain.Source, f source.Filter, ff *filterFlags, _ *cobra.Command) error {
			top, err := reports.RunTop(s.Source, f)
			if err != nil {
				return err
			}
			if ff.json {
				return writeJSON(w, withLost(s, top))
			}
			levelNote(w, s, "top")
			for _, class := range sortedKeys(top) {
				output.Ops(w, fmt.Sprintf("Top %s latencies", class), top[class], ff.utc)
			}
			return nil
		})
}
