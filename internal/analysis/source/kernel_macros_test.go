package source

import (
	"database/sql"
	"slices"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver
	"github.com/whyslow/whyslow/internal/event"
)

// macroConn is a connection to an empty DuckDB with the macros made.
func macroConn(t *testing.T, macros string) *sql.Conn {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(t.Context(), macros); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestKernelMacros: the SQL macros say what internal/event says.
func TestKernelMacros(t *testing.T) {
	conn := macroConn(t, kernelMacros())
	var page int
	if err := conn.QueryRowContext(t.Context(), "SELECT page_size()").Scan(&page); err != nil || page != event.PageSize {
		t.Errorf("page_size() = %d (%v), want %d", page, err, event.PageSize)
	}
	for _, nc := range event.SyscallNames() {
		var poll sql.NullBool
		if err := conn.QueryRowContext(t.Context(), "SELECT is_poll(?)", nc[0]).Scan(&poll); err != nil || poll.Bool != slices.Contains(event.PollSyscalls, nc[0]) {
			t.Errorf("is_poll(%q) = %v (%v), want %v", nc[0], poll, err, slices.Contains(event.PollSyscalls, nc[0]))
		}
	}
	for _, op := range []event.BlockOp{event.BlockRead, event.BlockWrite, event.BlockDiscard, event.BlockWriteZeroes} {
		var n sql.NullInt64
		if err := conn.QueryRowContext(t.Context(), "SELECT block_op(?)", op.String()).Scan(&n); err != nil || !n.Valid || n.Int64 != int64(op) {
			t.Errorf("block_op(%q) = %v (%v), want %d", op, n, err, op)
		}
	}
}
