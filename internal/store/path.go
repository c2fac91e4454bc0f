package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrBadPath is a path DuckDB cannot be given: duckdb-go reads the name of
// a database as a URL, and what follows a '?' as its options. Refused, so
// that a recording named "rec.db?access_mode=read_write" is neither created
// as rec.db nor opened with options of its name's choosing.
var ErrBadPath = errors.New("a recording's path cannot hold '?', a control character or a '%' not followed by two hex digits")

// checkPath refuses a path that duckdb-go would not open as itself.
func checkPath(path string) error {
	_, err := url.Parse(path)
	if err != nil || strings.ContainsRune(path, '?') {
		return fmt.Errorf("%s: %w", path, ErrBadPath)
	}
	return nil
}
