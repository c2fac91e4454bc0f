package format

import (
	"strings"
	"testing"
)

// Names from traced programs must never drive the terminal.
func TestSafeNeutralisesTerminalInjection(t *testing.T) {
	for in, want := range map[string]string{
		"python3":                     "python3",
		"/tmp/ünïcode/ok.txt":         "/tmp/ünïcode/ok.txt",
		"evil\x1b[2J\x1b]0;pwned\x07": `evil\x1b[2J\x1b]0;pwned\x07`,
		"line\nbreak\rcr\ttab":        `line\x0abreak\x0dcr\x09tab`,
		"c1\u009bcontrol":             `c1\x9bcontrol`,
		"bidi\u202eexe.txt":           `bidi\u{202e}exe.txt`,
		"bad\xffutf8":                 `bad\xffutf8`,
		`back\slash`:                  `back\slash`,
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
		if strings.ContainsAny(Safe(in), "\x1b\n\r\x07") {
			t.Errorf("Safe(%q) still has control characters", in)
		}
	}
}

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Bytes(0), "0 B"}, {Bytes(1023), "1023 B"}, {Bytes(1536), "1.5 KiB"}, {Bytes(48 << 20), "48.0 MiB"},
		{Dur(850), "850 ns"}, {Dur(12_300), "12.3 us"}, {Dur(437_100_000), "437.1 ms"}, {Dur(6_400_000_000), "6.40 s"},
		{Pct(0.83), "83%"}, {Pct(0.004), "0.4%"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "4k": 4096, "1M": 1 << 20, "2g": 2 << 30, "0": 0} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "k", "-1", "1.5M", "lots"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) should fail", bad)
		}
	}
}
