package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// ErrNotOneSelect: `whyslow sql` runs one SELECT (or WITH ... SELECT), no
// more: a second statement, COPY, CALL, SET, PRAGMA, ATTACH, INSTALL and
// the rest are refused before they run.
var ErrNotOneSelect = errors.New("whyslow sql runs one read-only SELECT statement at a time")

// OneSelect checks that q is a single SELECT, prepared on conn (which then
// runs it): DuckDB runs every statement of a string, and some statements
// reach past a read-only database (logging to a file, profiling output).
func OneSelect(ctx context.Context, conn *sql.Conn, q string) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("the database driver is not DuckDB's")
		}
		st, err := c.Prepare(q) // refuses more than one statement (or none)
		if err != nil {
			if strings.Contains(err.Error(), "could not prepare query") {
				return ErrNotOneSelect
			}
			return errors.New(firstLine(err.Error())) // DuckDB's reason: a typo, a file it may not read
		}
		defer st.Close()
		s, ok := st.(*duckdb.Stmt)
		if !ok {
			return ErrNotOneSelect
		}
		t, err := s.StatementType()
		if err != nil || t != duckdb.STATEMENT_TYPE_SELECT {
			return ErrNotOneSelect
		}
		return nil
	})
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
