package format

import (
	"testing"
	"unicode/utf8"
)

// FuzzSafe: whatever a traced program names itself, what Safe makes of it
// is valid UTF-8 of runes a terminal only prints; a name that was that
// already is unchanged; and Safe of its own output changes nothing (it adds
// no character it would escape).
func FuzzSafe(f *testing.F) {
	for _, s := range []string{"", "bash", "kworker/0:1H", "\x1b]0;owned\x07", "a\u202eb", "\xff\xfe", `a\x41`,
		"\u2066x\u2069", "tab\there", "\u0085", "日本語", "\x7f", "\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Safe(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Safe(%q) = %q: not UTF-8", s, out)
		}
		for _, r := range out {
			if !safeRune(r) {
				t.Fatalf("Safe(%q) = %q holds %U", s, out, r)
			}
		}
		if Safe(out) != out {
			t.Fatalf("Safe(Safe(%q)) changed it again", s)
		}
		clean := utf8.ValidString(s)
		for _, r := range s {
			clean = clean && safeRune(r)
		}
		if clean && out != s {
			t.Fatalf("a printable name %q became %q", s, out)
		}
	})
}
