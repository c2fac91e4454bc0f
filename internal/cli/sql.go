package cli

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/output"
	"github.com/whyslow/whyslow/internal/store"
)

func newSQL() *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "sql FILE QUERY",
		Short: "Run SQL over a recording (tables and views: docs/trace-format.md)",
		Long: `Runs one SQL query over a recording and prints the rows as a table, CSV or JSON.
The recording is DuckDB: every DuckDB function works. Views: io, disk,
file_names, unlinks, processes; raw tables: syscalls, syscall_totals, offcpu,
stacks, block, dirtied, writeback, throttle, cputime, forks, execs, exits,
uring, files, lost, meta. The recording is opened read-only and with DuckDB's
external access off, and DuckDB's temporary directory is an empty one of its
own: a query reads and writes no other file. One SELECT (or WITH ... SELECT)
statement at a time; anything else is refused before it runs. With
--format json, rows are objects by column name; NaN and infinities, which
JSON has no words for, are null, and DECIMALs are numbers.`,
		Example: `  whyslow sql rec.db "SELECT comm, sum(bytes) FROM io GROUP BY comm ORDER BY 2 DESC LIMIT 5"`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if as != "table" && as != "csv" && as != "json" {
				return usageErr("--format must be table, csv or json")
			}
			src, done, err := openSource(args[0])
			if err != nil {
				return err
			}
			defer done()
			ctx := context.Background()
			conn, err := src.DB.Conn(ctx)
			if err != nil {
				return withCode(ExitBadFile, err)
			}
			defer conn.Close()
			if err := store.OneSelect(ctx, conn, args[1]); err != nil {
				return withCode(ExitUsage, fmt.Errorf("query: %s", firstLine(err)))
			}
			rows, err := conn.QueryContext(ctx, args[1])
			if err != nil {
				return withCode(ExitUsage, fmt.Errorf("query: %s", firstLine(err)))
			}
			defer rows.Close()
			return printRows(cmd.OutOrStdout(), rows, as, stdoutIsTerminal())
		},
	}
	cmd.Flags().StringVar(&as, "format", "table", "table, csv or json")
	return cmd
}

// printRows prints a query's rows. A table is for reading: its strings are
// made safe for a terminal (format.Safe). CSV keeps what was stored, unless
// it goes to a terminal: a stored name must not set its title or reverse
// its text (as ls escapes names for a terminal only).
func printRows(w io.Writer, rows *sql.Rows, as string, terminal bool) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var t output.Table
	for _, c := range cols {
		t.Cols = append(t.Cols, output.Column{Title: c})
	}
	var cw *csv.Writer
	var records []map[string]any
	if as == "csv" {
		cw = csv.NewWriter(w)
		cw.Write(cols)
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		switch as {
		case "csv":
			rec := make([]string, len(vals))
			for i, v := range vals {
				rec[i] = cell(v)
				if terminal {
					rec[i] = format.Safe(rec[i])
				}
			}
			cw.Write(rec)
		case "json":
			m := make(map[string]any, len(cols))
			for i, c := range cols {
				m[c] = jsonValue(vals[i])
			}
			records = append(records, m)
		default:
			row := make([]any, len(vals))
			for i, v := range vals {
				row[i] = format.Safe(cell(v))
			}
			t.Row(row...)
		}
	}
	if err := rows.Err(); err != nil {
		return withCode(ExitUsage, fmt.Errorf("query: %s", firstLine(err)))
	}
	switch as {
	case "csv":
		cw.Flush()
		return cw.Error()
	case "json":
		if records == nil {
			records = []map[string]any{}
		}
		return writeJSON(w, records)
	}
	t.Write(w)
	return nil
}

// jsonValue is a value JSON can hold as the number or text it is: a
// DECIMAL as a number; NaN and ±Inf, which DuckDB's doubles
// may be and JSON has no words for, become null (encoding/json refuses
// them, and the whole result with them), in lists and maps too.
func jsonValue(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	case duckdb.Decimal: // a literal like 2.5 is a DECIMAL: a number, not {Width, Scale, Value}
		return jsonValue(x.Float64())
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return format.Safe(string(x))
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = cell(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}
