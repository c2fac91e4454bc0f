package protocol

import (
	"bytes"
	"strings"
)

// A request is labelled by its first bytes (those the kernel kept: the
// first 256 of its turn, event.PayloadKept; 128 in older recordings), by
// the first protocol whose Labeller knows them (Label).

// HTTP/1.x is cut by read-then-write: a client waits for each answer before
// it asks again (pipelining is unused), and the request line is the label.
var httpProtocol = &Protocol{
	Name:     "http",
	Detect:   func(first []byte) bool { return httpLabel(first, false) != "" },
	Labeller: LabelFunc(httpLabel),
}

// httpLabel reads an HTTP/1.x request line: "GET /popularity/linux", the
// query string dropped unless kept. Empty when data is not one.
func httpLabel(data []byte, keepQuery bool) string {
	line, _, _ := bytes.Cut(data, []byte("\r\n"))
	f := strings.Fields(string(line))
	if len(f) < 2 || len(f[0]) > 16 {
		return ""
	}
	for _, c := range f[0] {
		if c < 'A' || c > 'Z' {
			return ""
		}
	}
	target := f[1]
	if len(f) >= 3 && !strings.HasPrefix(f[2], "HTTP/") {
		return ""
	}
	if !keepQuery {
		target, _, _ = strings.Cut(target, "?")
	}
	return f[0] + " " + target
}

// isWord: A-Z only, as a command or keyword is.
func isWord(s string) bool {
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return s != ""
}
