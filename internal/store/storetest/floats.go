package storetest

import (
	"regexp"
	"strconv"
)

var longFloat = regexp.MustCompile(`-?[0-9]+\.[0-9]{10,}(e[-+][0-9]+)?`)

// RoundFloats rounds the long numbers of a report (JSON floats) to 9
// significant digits: sums of floats differ in their last digits with the
// order they were added in (maps, parallel aggregates), and no output shows
// them to that precision. Tests compare reports through it.
func RoundFloats(s string) string {
	return longFloat.ReplaceAllStringFunc(s, func(f string) string {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return f
		}
		return strconv.FormatFloat(v, 'g', 9, 64)
	})
}
