package event

import (
	"strings"
	"unicode/utf8"
)

// Names the kernel gives (paths, command names, argv, unlinked names, cgroup
// paths) are bytes, not UTF-8, but everything whyslow hands them to needs
// UTF-8: DuckDB stores a VARCHAR that is not as NULL, JSON replaces its bytes
// with U+FFFD, Prometheus refuses the label. So every name becomes text once,
// where it is read, with EncodeText, and DecodeText gives its bytes back
// (docs/trace-format.md, "Names that are not UTF-8").
//
// The encoding: a name that is valid UTF-8 is kept byte for byte (so paths
// with a backslash are untouched). A name that is not is escaped: each byte
// outside a valid UTF-8 sequence becomes \xNN (lowercase hex), each backslash
// \\, the rest is kept. One kind of valid name is escaped too, or it would
// read as another: one whose backslashes unescape, \\ and \xNN only, into
// bytes that are not UTF-8 (a file literally named `\xff`, as the shell's
// touch '\xff' makes), or into another such name. Escaping it doubles its
// backslashes. Every string then decodes to exactly one name.

// EncodeText returns raw as UTF-8 text. A valid name without a backslash,
// nearly every name, costs one validation and no allocation.
func EncodeText(raw string) string {
	if utf8.ValidString(raw) && !readsAsEscaped(raw) {
		return raw
	}
	return escape(raw)
}

// DecodeText returns the bytes EncodeText was given for text.
func DecodeText(text string) string {
	if raw, ok := unescape(text); ok && (!utf8.ValidString(raw) || readsAsEscaped(raw)) {
		return raw
	}
	return text
}

// readsAsEscaped says whether a valid name, kept as it is, would be taken
// for an escaped one: unescaping it gives bytes that are not UTF-8, or a
// name that itself reads as escaped. Each round removes a backslash at
// least, so it ends.
func readsAsEscaped(s string) bool {
	for strings.IndexByte(s, '\\') >= 0 {
		raw, ok := unescape(s)
		if !ok {
			return false
		}
		if !utf8.ValidString(raw) {
			return true
		}
		s = raw
	}
	return false
}

const hexDigits = "0123456789abcdef"

// escape writes each byte of raw outside valid UTF-8 as \xNN and each
// backslash as \\.
func escape(raw string) string {
	var b strings.Builder
	b.Grow(len(raw) + 8)
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRuneInString(raw[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[raw[i]>>4])
			b.WriteByte(hexDigits[raw[i]&0xf])
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(raw[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unescape reverses escape; it fails on a backslash followed by anything
// but a backslash or x and two lowercase hex digits.
func unescape(s string) (string, bool) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b = append(b, s[i])
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '\\':
			b = append(b, '\\')
			i++
		case i+3 < len(s) && s[i+1] == 'x' && hexValue(s[i+2]) >= 0 && hexValue(s[i+3]) >= 0:
			b = append(b, byte(hexValue(s[i+2])<<4|hexValue(s[i+3])))
			i += 3
		default:
			return "", false
		}
	}
	return string(b), true
}

func hexValue(c byte) int {
	return strings.IndexByte(hexDigits, c)
}
