package protocol

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRequestLabel: a request's first bytes are a client's, anyone's. A
// label is never longer than the bytes it came from plus its separators,
// is valid UTF-8, keeps no query string unless asked, and the same bytes
// give the same label; a traceparent taken from them is whole and valid.
func FuzzRequestLabel(f *testing.F) {
	for _, s := range []string{
		"GET /popularity/linux?x=1 HTTP/1.1\r\nHost: a\r\n", "POST / HTTP/1.0\r\n", "GET\r\n",
		"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", "*1\r\n$4\r\nPING\r\n",
		"Q\x00\x00\x00\x1bSELECT * FROM t WHERE a=1\x00", "\x00\x00\x00\x08\x04\xd2\x16\x2f",
		"GET /\xff\xfe HTTP/1.1\r\n", strings.Repeat("A", 200),
		"GET / HTTP/1.1\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, first []byte, keepQuery bool) {
		label := Label(first, keepQuery)
		if !utf8.ValidString(label) {
			t.Fatalf("label %q is not UTF-8", label)
		}
		if len(label) > 4*len(first)+16 {
			t.Fatalf("label of %d bytes from %d", len(label), len(first))
		}
		if !keepQuery && strings.HasPrefix(label, "GET ") && strings.Contains(label, "?") {
			t.Fatalf("label %q keeps a query string", label)
		}
		if again := Label(first, keepQuery); again != label {
			t.Fatalf("labelled %q, then %q", label, again)
		}
		// A traceparent is one found whole among the bytes, and valid.
		if tp := TraceParent(first); tp != "" && (!validTraceParent(tp) || !strings.Contains(string(first), tp+"\r\n")) {
			t.Fatalf("traceparent %q from %q", tp, first)
		}
	})
}
