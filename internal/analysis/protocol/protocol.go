// Package protocol knows the wire formats requests are cut by: which one a
// connection speaks (Detect), how a request of it is named (a Labeller) and,
// for the formats framed by message, how a client's bytes cut into requests
// (a Framer). It reads bytes only: `report requests` (internal/analysis)
// and `whyslow watch` run connections through it.
package protocol

import "github.com/whyslow/whyslow/internal/event"

// A request is cut from a connection by its protocol. Most request/response
// protocols cut well by read-then-write (internal/analysis, cutRequests): a
// request begins when bytes arrive after the server's answer and ends with
// the last bytes it wrote back: HTTP/1.x, and any protocol whose client
// waits for each answer. Protocols whose clients pipeline, whose
// connections begin with a handshake, or whose server reads a request in
// pieces (FastCGI's records) are framed by message instead: the bytes the
// server read are cut into the client's messages, and each request is
// answered in turn (docs/requests-json.md). A protocol is one Protocol
// value, in one file.

// A Labeller names a request by its first bytes, "" when they are not one of
// its protocol's. It reads only what names the kind of request, never its
// values: a query string, a key, a SQL literal may hold secrets.
type Labeller interface {
	Label(first []byte, keepQuery bool) string
}

// LabelFunc is a Labeller that is one function.
type LabelFunc func(first []byte, keepQuery bool) string

func (f LabelFunc) Label(first []byte, keepQuery bool) string { return f(first, keepQuery) }

// A Framer cuts what a client sent on one connection into requests, read by
// read, keeping what it needs between reads (a message split across two, a
// prepared statement's text).
type Framer interface {
	// Feed takes the next read: data is what the recording kept of the n
	// bytes it returned (data may be shorter). It returns the requests
	// whose last message it completed, in order.
	Feed(data []byte, n int) []Frame
}

// Frame is one request a Framer cut.
type Frame struct {
	Label string
	// Setup: a connection's start-up or authentication, answered by the
	// server but no request of a client's.
	Setup bool
	// Back is how many reads before this one its first bytes came in.
	Back int
}

// Protocol is one wire format requests are cut by.
type Protocol struct {
	Name string
	// Detect says whether a connection speaks it, by the first bytes the
	// server read on it.
	Detect func(first []byte) bool
	Labeller
	// NewFramer gives a framer for one connection; nil: read-then-write.
	NewFramer func() Framer
	// AnswersAll: one write answers every request read before it (a
	// server that runs a pipeline's commands and then writes their replies
	// at once), rather than the oldest waiting one.
	AnswersAll bool
}

// protocols, tried in order: the first whose Detect (or Label) knows the
// bytes wins.
var protocols = []*Protocol{httpProtocol, redisProtocol, postgresProtocol, mysqlProtocol, fastcgiProtocol}

// Detect is the protocol a connection speaks by the first bytes the server
// read on it (StartBytes of them, in up to StartReads reads), nil when none
// knows them.
func Detect(first []byte) *Protocol {
	for _, p := range protocols {
		if p.Detect(first) {
			return p
		}
	}
	return nil
}

// A connection's protocol is known by its first bytes: those of its first
// reads, up to StartBytes of them or StartReads reads (a server may read a
// message's header alone, as MariaDB does).
const StartBytes, StartReads = 64, 4

// Label names a request by its first bytes, "" when no protocol knows them.
// keepQuery keeps an HTTP path's query string.
func Label(first []byte, keepQuery bool) string {
	label, _ := LabelOf(first, keepQuery)
	return label
}

// LabelOf is Label, and the Name of the protocol that named it: what a
// request's consumers (OTLP's semantic conventions, JSON) read, instead of
// parsing the label back.
func LabelOf(first []byte, keepQuery bool) (label, protocol string) {
	for _, p := range protocols {
		if s := p.Label(first, keepQuery); s != "" {
			// A path's bytes are the client's: not UTF-8, they are text
			// as recorded names are (event.EncodeText), and JSON keeps them.
			return event.EncodeText(s), p.Name
		}
	}
	return "", ""
}
