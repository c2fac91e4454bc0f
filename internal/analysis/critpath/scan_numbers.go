package critpath

import "fmt"

// scanU64 and scanU32 scan DuckDB's unsigned integers without reflection:
// database/sql converts a driver's integer into an integer field by
// reflection, a Scanner is one interface call. For the reads of tens of
// thousands of rows (the critical path's waits): scan into
// (*scanU64)(&field). A NULL or another type is an error, as it is for a
// plain integer field.
type (
	scanU64 uint64
	scanU32 uint32
)

func (v *scanU64) Scan(src any) error {
	x, ok := src.(uint64)
	if !ok {
		return fmt.Errorf("scanning %T (%v) as an unsigned 64-bit integer", src, src)
	}
	*v = scanU64(x)
	return nil
}

func (v *scanU32) Scan(src any) error {
	x, ok := src.(uint32)
	if !ok {
		return fmt.Errorf("scanning %T (%v) as an unsigned 32-bit integer", src, src)
	}
	*v = scanU32(x)
	return nil
}
