// Package format turns numbers and untrusted strings into text people can
// read: human units, and Safe for every string that came from a traced
// program, before it reaches a terminal.
package format

import (
	"fmt"
	"time"
)

// Bytes formats a byte count with binary units: 512 B, 1.5 KiB, 48.0 MiB.
func Bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Dur formats nanoseconds the way latency tools do: 850 ns, 12.3 us, 437.1 ms, 6.40 s.
func Dur(ns uint64) string {
	switch {
	case ns < 1_000:
		return fmt.Sprintf("%d ns", ns)
	case ns < 1_000_000:
		return fmt.Sprintf("%.1f us", float64(ns)/1e3)
	case ns < 1_000_000_000:
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.2f s", float64(ns)/1e9)
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
