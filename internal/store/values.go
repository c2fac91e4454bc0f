package store

import "database/sql/driver"

// Uint64 and Int64 are a value DuckDB returned as a number, whichever
// integer type its column has (a driver value, or one database/sql scanned
// into any): DuckDB's unsigned columns come as uint64 or
// uint32, signed ones as int64, int32, int16; NULL as nil (0).
func Uint64(v driver.Value) uint64 {
	switch x := v.(type) {
	case uint64:
		return x
	case uint32:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint8:
		return uint64(x)
	case int64:
		return uint64(x)
	case int32:
		return uint64(x)
	case int16:
		return uint64(x)
	case int8:
		return uint64(x)
	}
	return 0
}

func Int64(v driver.Value) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int8:
		return int64(x)
	}
	return int64(Uint64(v))
}
