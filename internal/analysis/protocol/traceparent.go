package protocol

import (
	"bytes"
	"strings"
)

// TraceParent is the W3C Trace Context traceparent header among an HTTP
// request's first bytes, "" when there is none, it is cut off by the
// payload's end, or it is not valid: version-traceid-parentid-flags, lower
// case hex, ids not all zero, version not ff
// (https://www.w3.org/TR/trace-context/#traceparent-header).
func TraceParent(first []byte) string {
	if httpLabel(first, false) == "" {
		return ""
	}
	_, headers, _ := bytes.Cut(first, []byte("\r\n"))
	for len(headers) > 0 {
		line, rest, whole := bytes.Cut(headers, []byte("\r\n"))
		if !whole || len(line) == 0 {
			return "" // the payload's end, or the headers' end
		}
		headers = rest
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(name), "traceparent") {
			v := string(bytes.TrimSpace(value))
			if validTraceParent(v) {
				return v
			}
			return ""
		}
	}
	return ""
}

func validTraceParent(v string) bool {
	// Later versions may append fields: the first four are version 00's.
	if len(v) < 55 || len(v) > 55 && v[55] != '-' {
		return false
	}
	f := strings.Split(v[:55], "-")
	if len(f) != 4 || len(f[0]) != 2 || len(f[1]) != 32 || len(f[2]) != 16 || len(f[3]) != 2 {
		return false
	}
	for _, part := range f {
		if !lowerHex(part) {
			return false
		}
	}
	if f[0] == "ff" || f[0] == "00" && len(v) != 55 {
		return false
	}
	return strings.Trim(f[1], "0") != "" && strings.Trim(f[2], "0") != ""
}

func lowerHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
