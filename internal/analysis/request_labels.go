package analysis

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/event"
)

// A request is labelled by its first bytes (at most 128, read in the
// kernel), by the first protocol that recognises them. Each labeller reads
// only what names the kind of request, never its values: a query string, a
// key, a SQL literal may hold secrets.
var labellers = []func(first []byte, keepQuery bool) string{httpLabel, redisLabel, postgresLabel}

// requestLabel is the label of a request by its first bytes, "" when no
// protocol knows them.
func requestLabel(first []byte, keepQuery bool) string {
	for _, l := range labellers {
		if s := l(first, keepQuery); s != "" {
			// A path's bytes are the client's: not UTF-8, they are text
			// as recorded names are (event.EncodeText), and JSON keeps them.
			return event.EncodeText(s)
		}
	}
	return ""
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

// redisLabel reads a Redis command in RESP, an array of bulk strings:
// "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" is "redis GET".
func redisLabel(data []byte, _ bool) string {
	if len(data) < 4 || data[0] != '*' {
		return ""
	}
	_, rest, ok := bytes.Cut(data, []byte("\r\n"))
	if !ok || len(rest) < 2 || rest[0] != '$' {
		return ""
	}
	size, rest, ok := bytes.Cut(rest[1:], []byte("\r\n"))
	n, err := strconv.Atoi(string(size))
	if !ok || err != nil || n <= 0 || n > 32 || len(rest) < n {
		return ""
	}
	cmd := strings.ToUpper(string(rest[:n]))
	if !isWord(cmd) {
		return ""
	}
	return "redis " + cmd
}

// postgresLabel reads a PostgreSQL frontend message that carries a query:
// a simple Query ('Q') or an extended protocol Parse ('P'), labelled by the
// statement's first keyword: "postgres SELECT".
func postgresLabel(data []byte, _ bool) string {
	if len(data) < 6 || data[0] != 'Q' && data[0] != 'P' {
		return ""
	}
	size := binary.BigEndian.Uint32(data[1:5])
	if size < 5 || size > 1<<30 {
		return ""
	}
	body := data[5:]
	if data[0] == 'P' { // the statement's name, NUL-terminated, then the query
		_, q, ok := bytes.Cut(body, []byte{0})
		if !ok {
			return ""
		}
		body = q
	}
	f := strings.Fields(string(body))
	if len(f) == 0 {
		return ""
	}
	kw := strings.ToUpper(strings.TrimRight(f[0], ";\x00"))
	if !isWord(kw) || len(kw) > 16 {
		return ""
	}
	return "postgres " + kw
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

// RequestLabel names a request by its first bytes, as `report requests`
// does, the query string left out: for a live view (whyslow watch).
func RequestLabel(data []byte) string { return requestLabel(data, false) }
