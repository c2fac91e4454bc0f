package store

import (
	"fmt"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
)

// TestDamaged: DuckDB's errors that say the file is not what its schema
// says are damage; a query's own bad input is not.
func TestDamaged(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&duckdb.Error{Type: duckdb.ErrorTypeSerialization, Msg: "Failed to deserialize"}, true},
		{fmt.Errorf("reading syscalls: %w", &duckdb.Error{Type: duckdb.ErrorTypeInvalidInput,
			Msg: "Invalid unicode (byte sequence mismatch) detected in segment statistics update"}), true},
		{&duckdb.Error{Type: duckdb.ErrorTypeInvalidInput, Msg: "Malformed JSON at byte 0 of input"}, false},
		{&duckdb.Error{Type: duckdb.ErrorTypeConversion, Msg: "Could not convert string 'x' to INT32"}, false},
		// a doctored segment's compression code (CI, an explanation's query)
		{fmt.Errorf("collecting the target's I/O: %w", &duckdb.Error{Type: duckdb.ErrorTypeNotImplemented,
			Msg: `Enum value: unrecognized enum value "86" for enum "CompressionType"`}), true},
		{&duckdb.Error{Type: duckdb.ErrorTypeNotImplemented, Msg: "Unsupported join type"}, false},
		{fmt.Errorf("plain"), false},
	} {
		if got := Damaged(c.err); got != c.want {
			t.Errorf("Damaged(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
