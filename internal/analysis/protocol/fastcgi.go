package protocol

import (
	"encoding/binary"
	"strings"
)

// FastCGI (a web server to PHP-FPM and the like): a request is records, a
// BEGIN_REQUEST, its PARAMS (the CGI variables, name-value pairs, ended by
// an empty PARAMS) and its STDIN (the body). It is framed by record:
// PHP-FPM reads a record's header and its content in reads of their own,
// so a request's first read holds 8 bytes and no name. The request is
// whole at its PARAMS' end: PHP-FPM runs the script then, reads the body as
// the script asks for it, and the empty STDIN that ends it only after it
// has answered. The label is the request's method
// and path from its PARAMS, "GET /index.php", as the web server's own
// request was labelled. The server sends the next request on a connection
// once the last is answered (nginx does not multiplex).
var fastcgiProtocol = &Protocol{
	Name:      "fastcgi",
	Detect:    func(first []byte) bool { return fastcgiLabel(first, false) != "" },
	Labeller:  LabelFunc(fastcgiLabel),
	NewFramer: func() Framer { return &fastcgiFramer{} },
}

const (
	fcgiVersion      = 1
	fcgiBeginRequest = 1
	fcgiParams       = 4
	fcgiHeaderLen    = 8
	// fcgiKeep is how much of a request's records the framer keeps to
	// label it: its PARAMS name the method and path within their first few
	// hundred bytes.
	fcgiKeep = 2048
)

// fastcgiFramer follows one connection's records across reads.
type fastcgiFramer struct {
	head   []byte // a record header split across reads
	skip   int    // the current record's content and padding still to come
	keep   []byte // the current request's records, up to fcgiKeep, for its label
	began  int    // the read its BEGIN_REQUEST came in
	reads  int
	open   bool // a request has begun and not ended
	broken bool // lost in bytes the recording did not keep: wait for a read that begins a request
}

func (f *fastcgiFramer) Feed(data []byte, n int) []Frame {
	f.reads++
	var out []Frame
	if f.broken {
		if len(data) < 2 || data[0] != fcgiVersion || data[1] != fcgiBeginRequest {
			return nil
		}
		f.broken, f.head, f.skip, f.open = false, nil, 0, false
	}
	for pos := 0; pos < n; {
		if f.skip > 0 {
			adv := min(f.skip, n-pos)
			if pos < len(data) {
				f.note(data[pos:min(len(data), pos+adv)])
			}
			f.skip -= adv
			pos += adv
			continue
		}
		if pos >= len(data) { // a header past what was kept
			f.broken, f.head, f.open, f.keep = true, nil, false, nil
			return out
		}
		need := fcgiHeaderLen - len(f.head)
		take := min(need, len(data)-pos, n-pos)
		f.head = append(f.head, data[pos:pos+take]...)
		pos += take
		if len(f.head) < fcgiHeaderLen {
			continue
		}
		h := f.head
		f.head = nil
		if h[0] != fcgiVersion {
			f.broken, f.open, f.keep = true, false, nil
			return out
		}
		content := int(h[4])<<8 | int(h[5])
		f.skip = content + int(h[6])
		switch h[1] {
		case fcgiBeginRequest:
			f.open, f.began, f.keep = true, f.reads, nil
		case fcgiParams:
			if content == 0 && f.open {
				f.open = false
				label := fastcgiLabel(f.keep, false)
				if label == "" {
					label = "FastCGI request"
				}
				f.keep = nil
				out = append(out, Frame{Label: label, Back: f.reads - f.began})
				continue
			}
		}
		f.note(h)
	}
	return out
}

// note keeps b, part of the current request's records, for its label.
func (f *fastcgiFramer) note(b []byte) {
	if f.open && len(f.keep) < fcgiKeep {
		f.keep = append(f.keep, b[:min(len(b), fcgiKeep-len(f.keep))]...)
	}
}

// fastcgiLabel reads a FastCGI request's first records: "GET /index.php"
// from REQUEST_METHOD and REQUEST_URI (its query string dropped unless
// kept), or DOCUMENT_URI or SCRIPT_NAME without a REQUEST_URI (the
// parameters a web server's stock FastCGI settings pass: Debian's
// /etc/nginx/fastcgi_params). Empty when data is not a
// request's start, or its PARAMS name no method.
func fastcgiLabel(data []byte, keepQuery bool) string {
	body, rest, ok := fcgiRecord(data, fcgiBeginRequest)
	if !ok || len(body) != 8 {
		return ""
	}
	var method, uri, script string
	for {
		var params []byte
		if params, rest, ok = fcgiRecord(rest, fcgiParams); !ok || len(params) == 0 {
			break // past what was kept, or the empty record that ends them
		}
		for len(params) > 0 {
			var name, value []byte
			if name, value, params, ok = fcgiPair(params); !ok {
				break // a pair split across records, or cut: what came is enough
			}
			switch string(name) {
			case "REQUEST_METHOD":
				method = string(value)
			case "REQUEST_URI":
				uri = string(value)
			case "DOCUMENT_URI", "SCRIPT_NAME":
				if script == "" {
					script = string(value)
				}
			}
		}
	}
	if uri == "" {
		uri = script
	}
	if !isWord(method) || len(method) > 16 || uri == "" || strings.ContainsAny(uri, " \r\n") {
		return ""
	}
	if !keepQuery {
		uri, _, _ = strings.Cut(uri, "?")
	}
	return method + " " + uri
}

// fcgiRecord reads a record of type typ at the start of data: its content
// (cut at what data holds) and what follows it.
func fcgiRecord(data []byte, typ byte) (content, rest []byte, ok bool) {
	if len(data) < fcgiHeaderLen || data[0] != fcgiVersion || data[1] != typ {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(data[4:6]))
	end := fcgiHeaderLen + n + int(data[6]) // padding
	content = data[fcgiHeaderLen:min(len(data), fcgiHeaderLen+n)]
	if end > len(data) {
		return content, nil, true
	}
	return content, data[end:], true
}

// fcgiPair reads one name-value pair: each length is a byte, or four with
// the high bit set.
func fcgiPair(p []byte) (name, value, rest []byte, ok bool) {
	nl, p, ok := fcgiLength(p)
	if !ok {
		return nil, nil, nil, false
	}
	vl, p, ok := fcgiLength(p)
	if !ok || nl+vl > len(p) {
		return nil, nil, nil, false
	}
	return p[:nl], p[nl : nl+vl], p[nl+vl:], true
}

func fcgiLength(p []byte) (int, []byte, bool) {
	switch {
	case len(p) == 0:
		return 0, nil, false
	case p[0] < 0x80:
		return int(p[0]), p[1:], true
	case len(p) < 4:
		return 0, nil, false
	}
	n := binary.BigEndian.Uint32(p) & 0x7fffffff
	if n > 1<<20 {
		return 0, nil, false
	}
	return int(n), p[4:], true
}
