package format

import (
	"fmt"
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
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q: want bytes, e.g. 4096, 4k, 1M", s)
	}
	return n * mult, nil
}
