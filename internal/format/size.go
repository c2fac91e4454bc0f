package format

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize reads a byte count as people write it: 4096, 4k, 1M, 2G (binary units).
func ParseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	switch strings.ToLower(s[max(len(s)-1, 0):]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	}
	if mult > 1 {
		num = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("bad size %q: want bytes, e.g. 4096, 4k, 1M", s)
	}
	return n * mult, nil
}

// NoLimit is what ParseSizeLimit returns for an empty value.
const NoLimit = -1

// ParseSizeLimit reads a size bound (--minsize, --maxsize): empty is NoLimit.
func ParseSizeLimit(s string) (int64, error) {
	if s == "" {
		return NoLimit, nil
	}
	return ParseSize(s)
}
