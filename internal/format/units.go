// Package format turns numbers and untrusted strings into text people can
// read: human units, and Safe for every string that came from a traced
// program, before it reaches a terminal.
package format

import (
	"fmt"
	"strconv"
	"time"
)

// Bytes formats a byte count with binary units: 512 B, 1.5 KiB, 48.0 MiB.
func Bytes(n uint64) string { return string(AppendBytes(nil, n)) }

// AppendBytes appends Bytes(n) to b: the log prints millions, without an
// allocation each.
func AppendBytes(b []byte, n uint64) []byte {
	const unit = 1024
	if n < unit {
		return append(strconv.AppendUint(b, n, 10), " B"...)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	b = strconv.AppendFloat(b, float64(n)/float64(div), 'f', 1, 64)
	return append(append(b, ' ', "KMGTPE"[exp]), "iB"...)
}

// Dur formats nanoseconds the way latency tools do: 850 ns, 12.3 us, 437.1 ms, 6.40 s.
func Dur(ns uint64) string { return string(AppendDur(nil, ns)) }

// AppendDur appends Dur(ns) to b.
func AppendDur(b []byte, ns uint64) []byte {
	switch {
	case ns < 1_000:
		return append(strconv.AppendUint(b, ns, 10), " ns"...)
	case ns < 1_000_000:
		return append(strconv.AppendFloat(b, float64(ns)/1e3, 'f', 1, 64), " us"...)
	case ns < 1_000_000_000:
		return append(strconv.AppendFloat(b, float64(ns)/1e6, 'f', 1, 64), " ms"...)
	}
	return append(strconv.AppendFloat(b, float64(ns)/1e9, 'f', 2, 64), " s"...)
}

// Seconds is Dur for a float of seconds.
func Seconds(s float64) string { return Dur(uint64(s * 1e9)) }

// Pct formats a share: 83%, 0.4%.
func Pct(share float64) string {
	p := share * 100
	if p < 10 && p > 0 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// Clock formats a wall time the way LTTng does: [15:04:05.000000000].
func Clock(t time.Time, utc bool) string {
	if utc {
		t = t.UTC()
	}
	return t.Format("15:04:05.000000000")
}
