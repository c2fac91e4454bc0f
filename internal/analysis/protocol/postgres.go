package protocol

import (
	"bytes"
	"encoding/binary"
)

// PostgreSQL's frontend protocol (version 3): after an untyped start-up
// packet, each message is a type byte and a 4-byte big-endian length that
// counts itself. A simple Query ('Q') is one request; in the extended
// protocol a request is the messages up to a Sync ('S'): Parse, Bind,
// Describe, Execute, pipelined or not. The start-up, TLS and GSS requests,
// and the password or SASL messages ('p') that follow, are the
// connection's, not requests. The server answers each request with a
// ReadyForQuery, flushed on its own.
var postgresProtocol = &Protocol{
	Name:      "postgres",
	Detect:    postgresDetect,
	Labeller:  LabelFunc(postgresLabel),
	NewFramer: func() Framer { return &postgresFramer{startup: true, prepared: map[string]string{}} },
}

// Start-up codes of an untyped packet.
const (
	pgProtocol3 = 3 << 16
	pgCancel    = 80877102
	pgSSL       = 80877103
	pgGSS       = 80877104
)

func postgresDetect(first []byte) bool {
	return postgresStartup(first) || postgresLabel(first, false) != ""
}

// postgresStartup: an untyped packet a connection begins with.
func postgresStartup(data []byte) bool {
	if len(data) < 8 {
		return false
	}
	n, code := binary.BigEndian.Uint32(data), binary.BigEndian.Uint32(data[4:])
	return n >= 8 && n <= 10000 && (code == pgProtocol3 || code == pgCancel || code == pgSSL || code == pgGSS)
}

// postgresLabel reads a message that carries a query: a simple Query or a
// Parse, labelled "postgres " and its statement's keyword and first table.
func postgresLabel(data []byte, _ bool) string {
	if len(data) < 6 || data[0] != 'Q' && data[0] != 'P' {
		return ""
	}
	size := binary.BigEndian.Uint32(data[1:5])
	if size < 5 || size > 1<<30 {
		return ""
	}
	body := data[5:min(len(data), 1+int(size))]
	if data[0] == 'P' { // the statement's name, NUL-terminated, then the query
		_, q, ok := bytes.Cut(body, []byte{0})
		if !ok {
			return ""
		}
		body = q
	}
	if l := statementLabel(body); l != "" {
		return "postgres " + l
	}
	return ""
}

type postgresFramer struct {
	startup  bool              // untyped packets come next
	head     []byte            // a message's head split across reads
	skip     int               // bytes of the current message still to come
	open     bool              // an extended-protocol request has begun
	label    string            // and its label, from its first Parse or Bind
	began    int               // the read its first message came in
	reads    int               // reads fed
	prepared map[string]string // named statements' labels, by name
}

func (f *postgresFramer) Feed(data []byte, n int) []Frame {
	f.reads++
	if f.reads == 1 && !postgresStartup(data) {
		f.startup = false // a connection older than the recording
	}
	var out []Frame
	pos := 0
	for pos < n {
		if f.skip > 0 {
			adv := min(f.skip, n-pos)
			f.skip -= adv
			pos += adv
			continue
		}
		need := 5
		if f.startup {
			need = 8
		}
		// The head: what an earlier read left, then this one's bytes.
		head := append(f.head, data[min(pos, len(data)):min(len(data), pos+need-len(f.head))]...)
		if len(head) < need {
			if pos+need-len(f.head) <= n { // bytes the recording did not keep
				return f.lost(out)
			}
			f.head = head // the rest comes in the next read
			break
		}
		began := f.reads // the read the message began in
		if len(f.head) > 0 {
			began--
		}
		pos += need - len(f.head)
		f.head = nil
		if f.startup {
			size, code := binary.BigEndian.Uint32(head), binary.BigEndian.Uint32(head[4:])
			if size < 8 || size > 1<<20 {
				return f.lost(out)
			}
			f.skip = int(size) - 8
			if code != pgSSL && code != pgGSS {
				f.startup = false // the start-up packet (or a cancel, on its own connection)
			}
			out = append(out, Frame{Setup: true})
			continue
		}
		size := binary.BigEndian.Uint32(head[1:])
		if size < 4 || size > 1<<30 {
			return f.lost(out)
		}
		f.skip = int(size) - 4
		// The message as far as this read has it: its head, then its body.
		msg := append(head[:5:5], data[min(pos, len(data)):min(len(data), pos+f.skip)]...)
		out = f.message(head[0], msg, began, out)
	}
	return out
}

// message takes one typed message, which began in read began; msg is its
// bytes as far as the recording kept them.
func (f *postgresFramer) message(typ byte, msg []byte, began int, out []Frame) []Frame {
	switch typ {
	case 'Q':
		return append(out, Frame{Label: f.labelOf(postgresLabel(msg, false), "QUERY"), Back: f.reads - began})
	case 'p': // password, SASL: authentication
		return append(out, Frame{Setup: true})
	case 'P', 'B', 'D', 'E', 'C', 'H', 'F':
		if !f.open {
			f.open, f.began, f.label = true, began, ""
		}
		if f.label == "" {
			f.label = f.extendedLabel(typ, msg)
		}
		if typ == 'F' { // a function call is answered on its own
			return f.close(out, "FUNCTION CALL")
		}
	case 'S':
		if !f.open {
			f.began = began
		}
		return f.close(out, "SYNC")
	}
	// 'X' (terminate) and COPY's data ('d', 'c', 'f') are no requests.
	return out
}

func (f *postgresFramer) close(out []Frame, otherwise string) []Frame {
	out = append(out, Frame{Label: f.labelOf(f.label, otherwise), Back: f.reads - f.began})
	f.open, f.label = false, ""
	return out
}

func (f *postgresFramer) labelOf(label, otherwise string) string {
	if label == "" {
		return "postgres " + otherwise
	}
	return label
}

// extendedLabel labels a request by its Parse (remembering a named
// statement's) or by its Bind's statement.
func (f *postgresFramer) extendedLabel(typ byte, msg []byte) string {
	if len(msg) < 6 {
		return ""
	}
	switch typ {
	case 'P':
		label := postgresLabel(msg, false)
		if name, _, ok := bytes.Cut(msg[5:], []byte{0}); ok && len(name) > 0 && label != "" {
			f.prepared[string(name)] = label
		}
		return label
	case 'B': // the portal's name, then the statement's
		_, rest, _ := bytes.Cut(msg[5:], []byte{0})
		name, _, ok := bytes.Cut(rest, []byte{0})
		if ok {
			return f.prepared[string(name)]
		}
	}
	return ""
}

// lost gives up on this read past what the recording kept of it: the request
// it was in ends with it, and the next read begins a message.
func (f *postgresFramer) lost(out []Frame) []Frame {
	if f.open {
		out = f.close(out, "QUERY")
	}
	f.head, f.skip = nil, 0
	return out
}
