package cli

import "github.com/spf13/cobra"

func newLatencyReports() []*cobra.Command { return nil }
