package format

import (
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
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

// Names reach the display as text (event.EncodeText): a stray byte is
// already \xNN there, and Safe shows it as it showed the raw byte, not
// escaped twice; what Safe neutralises, it still does.
func TestSafeShowsTextAsTheRawName(t *testing.T) {
	for raw, want := range map[string]string{
		"\xff\xfeprog":       `\xff\xfeprog`,
		"my数据库服\xe5":         `my数据库服\xe5`,
		"evil\x1b[2J\xff":    `evil\x1b[2J\xff`,
		"bidi\u202e\xfe.txt": `bidi\u{202e}\xfe.txt`,
		"line\n\xff":         `line\x0a\xff`,
		`C:\dir`:             `C:\dir`,
		"a\\b\xff":           `a\\b\xff`, // the backslash of a name that is not UTF-8 is doubled
	} {
		text := event.EncodeText(raw)
		if got := Safe(text); got != want {
			t.Errorf("Safe(EncodeText(%q)) = %q, want %q", raw, got, want)
		}
		if !strings.Contains(raw, `\`) && Safe(text) != Safe(raw) {
			t.Errorf("%q shows as %q, raw as %q", raw, Safe(text), Safe(raw))
		}
		if strings.ContainsAny(Safe(text), "\x1b\n\r\x07\u202e") {
			t.Errorf("Safe(EncodeText(%q)) still has control characters", raw)
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
	for _, c := range []struct {
		in    string
		limit bool // through ParseSizeLimit
		want  int64
		bad   bool
	}{
		{in: "4096", want: 4096},
		{in: "4k", want: 4096},
		{in: "4K", want: 4096},
		{in: "1M", want: 1 << 20},
		{in: "2g", want: 2 << 30},
		{in: "0", want: 0},
		{in: "8589934591G", want: 8589934591 << 30},
		{in: "", bad: true},
		{in: "k", bad: true},
		{in: "-1", bad: true},
		{in: "1.5M", bad: true},
		{in: "lots", bad: true},
		{in: "4 k", bad: true},
		{in: "8589934592G", bad: true}, // 2^63 bytes: does not fit
		{in: "9223372036854775807k", bad: true},
		{in: "", limit: true, want: NoLimit},
		{in: "1k", limit: true, want: 1024},
		{in: "-1", limit: true, bad: true},
	} {
		parse := ParseSize
		if c.limit {
			parse = ParseSizeLimit
		}
		got, err := parse(c.in)
		switch {
		case c.bad && err == nil:
			t.Errorf("%q (limit %v) = %d, want an error", c.in, c.limit, got)
		case !c.bad && (err != nil || got != c.want):
			t.Errorf("%q (limit %v) = %d, %v; want %d", c.in, c.limit, got, err, c.want)
		}
	}
}
