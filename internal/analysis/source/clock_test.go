package source

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	start := time.Date(2026, 11, 22, 3, 10, 0, 0, time.UTC)
	c := Clock{OffsetNS: start.UnixNano() - 1_000_000_000, StartMono: 1_000_000_000}
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"+2.5s", 3_500_000_000},
		{"03:10:01.5", 2_500_000_000},
		{"2026-11-22 03:10:03", 4_000_000_000},
	} {
		got, err := c.ParseTime(tc.in, true)
		if err != nil || got != tc.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"25:99", "+forever", "yesterday", ""} {
		if _, err := c.ParseTime(bad, true); err == nil {
			t.Errorf("ParseTime(%q) should fail", bad)
		}
	}
	if _, _, err := c.ParseRange("[+2s,+1s]", true); err == nil {
		t.Error("a range that ends before it begins must fail")
	}
}
