package protocol

import "strings"

// statementLabel names a SQL statement by its keyword and the first table it
// names: "UPDATE pgbench_accounts", "SELECT t", "BEGIN". Literals, comments
// and everything after the table are skipped: a statement's values may hold
// secrets. "" when text does not begin with a keyword.
func statementLabel(text []byte) string {
	toks := sqlWords(text, 24)
	if len(toks) == 0 || !isWord(strings.ToUpper(toks[0])) || len(toks[0]) > 16 {
		return ""
	}
	kw := strings.ToUpper(toks[0])
	// The word after which a statement names its table.
	after := map[string]string{"SELECT": "FROM", "WITH": "FROM", "DELETE": "FROM", "INSERT": "INTO",
		"REPLACE": "INTO", "UPDATE": "UPDATE", "COPY": "COPY", "TRUNCATE": "TRUNCATE", "LOCK": "LOCK"}[kw]
	if after == "" {
		return kw
	}
	for i, t := range toks {
		if !strings.EqualFold(t, after) || (after == kw && i > 0) {
			continue
		}
		for _, name := range toks[i+1:] {
			switch strings.ToUpper(name) {
			case "ONLY", "TABLE", "LOW_PRIORITY", "IGNORE", "DELAYED", "QUICK", "INTO":
				continue
			}
			if isName(name) {
				return kw + " " + name
			}
			return kw
		}
	}
	return kw
}

// sqlWords are the first max words of a statement's text, up to its first
// ';': names (dotted and quoted ones kept whole) and punctuation, without
// literals, numbers or comments.
func sqlWords(text []byte, max int) []string {
	var out []string
	s := string(text)
	for len(s) > 0 && len(out) < max {
		c := s[0]
		switch {
		case c == ';':
			return out
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 0:
			s = s[1:]
		case strings.HasPrefix(s, "--"):
			_, s, _ = strings.Cut(s, "\n")
		case strings.HasPrefix(s, "/*"):
			_, s, _ = strings.Cut(s[2:], "*/")
		case c == '\'': // a literal: skipped whole
			s = skipQuoted(s[1:], '\'')
			out = append(out, "?")
		case c == '$' || c >= '0' && c <= '9': // a parameter or number
			n := 1
			for n < len(s) && (s[n] >= '0' && s[n] <= '9' || s[n] == '.') {
				n++
			}
			s = s[n:]
			out = append(out, "?")
		case isNameByte(c) || c == '"' || c == '`':
			n := nameLen(s)
			out = append(out, s[:n])
			s = s[n:]
		default:
			out = append(out, s[:1])
			s = s[1:]
		}
	}
	return out
}

// nameLen is the length of the (maybe dotted, maybe quoted) name s begins with.
func nameLen(s string) int {
	n := 0
	for n < len(s) {
		switch c := s[n]; {
		case c == '"' || c == '`':
			end := strings.IndexByte(s[n+1:], c)
			if end < 0 {
				return len(s)
			}
			n += end + 2
		case isNameByte(c) || c == '.' && n > 0:
			n++
		default:
			return max(n, 1)
		}
	}
	return n
}

func skipQuoted(s string, q byte) string {
	for i := 0; i < len(s); i++ {
		if s[i] == q {
			if i+1 < len(s) && s[i+1] == q { // a doubled quote is one inside
				i++
				continue
			}
			return s[i+1:]
		}
	}
	return ""
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// isName: a table's name, at most 64 bytes, quoted or starting with a letter.
func isName(s string) bool {
	return len(s) > 0 && len(s) <= 64 && (s[0] == '"' || s[0] == '`' || s[0] == '_' ||
		s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 0x80)
}
