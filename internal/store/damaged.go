package store

import (
	"errors"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// Damaged reports whether err is DuckDB finding a recording's contents
// other than its schema says: data it cannot decode (Serialization,
// Invalid, Internal, Fatal, IO), or tables and columns a recording of this
// version has and this one lacks (Catalog, Binder), or text in a column
// segment that is not text (Invalid Input, said of a segment), or a stored
// code no enum of DuckDB's has (Not implemented). whyslow's own queries
// are fixed, so on a recording that opened, these mean the file was damaged
// (or doctored) after it was written. A user's own query in `whyslow sql`
// is judged apart: its Binder error is a bad query.
func Damaged(err error) bool {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return false
	}
	switch de.Type {
	case duckdb.ErrorTypeSerialization, duckdb.ErrorTypeInvalid, duckdb.ErrorTypeInternal, duckdb.ErrorTypeFatal,
		duckdb.ErrorTypeIO, duckdb.ErrorTypeCatalog, duckdb.ErrorTypeBinder, duckdb.ErrorTypeIndex, duckdb.ErrorTypeStat:
		return true
	case duckdb.ErrorTypeInvalidInput:
		// Input a query gave is the user's (sql); input the storage gave
		// is the file's: "Invalid unicode ... detected in segment
		// statistics update", from a doctored string column.
		return strings.Contains(de.Msg, "segment")
	case duckdb.ErrorTypeNotImplemented:
		// A stored code past its enum (a column segment's compression,
		// doctored): the file's, whatever query met it. A feature a
		// user's query asks for and DuckDB lacks is said otherwise.
		return strings.Contains(de.Msg, "unrecognized enum value")
	}
	return false
}
