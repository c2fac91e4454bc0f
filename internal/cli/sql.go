package cli

import "github.com/spf13/cobra"

func newSQL() *cobra.Command { return &cobra.Command{Use: "sql", Hidden: true} }
