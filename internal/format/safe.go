package format

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Safe makes a string from a traced program (comm, path, argv) harmless on a
// terminal: control characters, escape sequences, invalid UTF-8 and
// bidirectional overrides are shown as \xNN or \u{NNNN}, never interpreted.
func Safe(s string) string {
	clean := true
	for _, r := range s {
		if !safeRune(r) {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x` + hex2(s[i]))
		case !safeRune(r):
			if r < 0x100 {
				b.WriteString(`\x` + hex2(byte(r)))
			} else {
				b.WriteString(`\u{` + strconv.FormatInt(int64(r), 16) + `}`)
			}
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func safeRune(r rune) bool {
	if r == '\\' {
		return true
	}
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
		return false
	}
	// bidi controls can reorder what a reader sees
	if (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f {
		return false
	}
	return unicode.IsPrint(r) || r == ' '
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
