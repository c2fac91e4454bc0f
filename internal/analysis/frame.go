package analysis

import (
	"sort"

	"github.com/whyslow/whyslow/internal/event"
)

// A request is cut from a connection by its protocol. Most request/response
// protocols cut well by read-then-write (cutRequests): a request begins when
// bytes arrive after the server's answer and ends with the last bytes it
// wrote back: HTTP/1.x, FastCGI, and any protocol whose client waits for
// each answer. Protocols whose clients pipeline, or whose connections begin
// with a handshake, are framed by message instead: the bytes the server read
// are cut into the client's messages, and each request is answered in turn
// (docs/requests-json.md). A protocol is one Protocol value, in one file.

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
var protocols = []*Protocol{httpProtocol, redisProtocol, postgresProtocol, mysqlProtocol}

// ProtocolOf is the protocol a connection speaks by the first bytes the
// server read on it, nil when none knows them: for a live view (whyslow
// watch), which frames as `report requests` does.
func ProtocolOf(first []byte) *Protocol { return protocolOf(first) }

func protocolOf(first []byte) *Protocol {
	for _, p := range protocols {
		if p.Detect(first) {
			return p
		}
	}
	return nil
}

// frameRequests cuts the target's connections into requests: those whose
// protocol frames by message with its Framer, when the recording kept every
// read's bytes (everyRead), the rest by read-then-write. clients are the
// connections the target opened (cutRequests).
func frameRequests(calls []socketCall, bytesOf map[labelKey]firstBytes, everyRead bool) (reqs []*request, clients map[connKey]bool) {
	var generic []socketCall
	clients = map[connKey]bool{}
	for len(calls) > 0 {
		n := 1
		for n < len(calls) && calls[n].conn == calls[0].conn {
			n++
		}
		conn := calls[:n]
		calls = calls[n:]
		p := protocolOf(firstRead(conn, bytesOf))
		if p == nil || p.NewFramer == nil || !everyRead {
			generic = append(generic, conn...)
			continue
		}
		if !serves(conn) {
			clients[conn[0].conn] = true
			continue
		}
		reqs = append(reqs, cutMessages(conn, bytesOf, p)...)
	}
	more, cl := cutRequests(generic)
	reqs = append(reqs, more...)
	for k := range cl {
		clients[k] = true
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].begin < reqs[j].begin })
	return reqs, clients
}

// A connection's protocol is known by its first bytes: those of its first
// reads, up to startBytes of them or startReads reads (a server may read a
// message's header alone, as MariaDB does).
const startBytes, startReads = 64, 4

// firstRead is the first bytes the server read on a connection.
func firstRead(conn []socketCall, bytesOf map[labelKey]firstBytes) []byte {
	var start []byte
	n := 0
	for _, c := range conn {
		if c.ret > 0 && reads.has(c.class, c.name) {
			start = append(start, bytesOf[labelKey{c.conn, c.ts}].data...)
			if n++; n == startReads || len(start) >= startBytes {
				break
			}
		}
	}
	return start
}

// serves says whether the target is a connection's server, by the first of
// its calls that says (serverSide).
func serves(conn []socketCall) bool {
	for _, c := range conn {
		if server, decided := serverSide(c); decided {
			return server
		}
	}
	return false
}

// opens says whether the call made its connection: accept, accept4, connect.
func opens(c socketCall) bool {
	return c.name == "accept" || c.name == "accept4" || c.name == "connect"
}

// serverSide is what one call says of the target's end of its connection:
// the server's if it accepted it, or (a connection older than the
// recording) if the first data on it went in; the client's if it connected,
// or the first data went out. decided is false for a call that says neither.
func serverSide(c socketCall) (server, decided bool) {
	switch {
	case opens(c):
		return c.name != "connect", true
	case c.ret > 0 && reads.has(c.class, c.name):
		return true, true
	case c.ret > 0 && writes.has(c.class, c.name):
		return false, true
	}
	return false, false
}

// cutMessages cuts one served connection by its protocol's messages. A
// request begins when the read that brought its first bytes returned (its
// arrival is placed later, as any request's) and ends with the write that
// answers it: the oldest request waiting, or every one with AnswersAll.
// Writes while none waits continue the last answer (a long result). A
// request still waiting when the connection closes was never answered and
// is none.
func cutMessages(conn []socketCall, bytesOf map[labelKey]firstBytes, p *Protocol) []*request {
	f := p.NewFramer()
	var (
		out, waiting, answered []*request
		seen                   []socketCall // the connection's reads so far
		given                  int          // reads whose bytes a request counts
		readSince              bool         // a read since the last write
	)
	for _, c := range conn {
		in := c.ret > 0 && reads.has(c.class, c.name)
		outb := c.ret > 0 && writes.has(c.class, c.name)
		switch {
		case in:
			seen = append(seen, c)
			readSince = true
			for _, fr := range f.Feed(bytesOf[labelKey{c.conn, c.ts}].data, int(c.ret)) {
				from := max(0, len(seen)-1-fr.Back)
				if fr.Setup {
					given = len(seen)
					continue
				}
				r := newRequest(seen[from])
				r.Label = event.EncodeText(fr.Label) // a table's name is the client's bytes
				for i := max(from, given); i < len(seen); i++ {
					r.BytesIn += uint64(seen[i].ret)
					if i > from && seen[i].blocked {
						r.ClientWaitS += float64(seen[i].dur) / 1e9 // more of it, late
					}
				}
				given = len(seen)
				waiting = append(waiting, r)
			}
		case outb && len(waiting) > 0:
			n := 1
			if p.AnswersAll {
				n = len(waiting)
			}
			answered = waiting[:n:n]
			waiting = waiting[n:]
			for _, r := range answered {
				r.answer(c, uint64(c.ret)/uint64(n))
				out = append(out, r)
			}
			readSince = false
		case outb && !readSince:
			for _, r := range answered {
				r.answer(c, uint64(c.ret)/uint64(len(answered)))
			}
		case c.name == "close" || (c.ret == 0 && reads.has(c.class, c.name)):
			waiting, answered = nil, nil
		}
	}
	return out
}

// newRequest is a request whose first bytes read brought.
func newRequest(read socketCall) *request {
	r := &request{firstRead: read.ts}
	r.TID, r.Comm = read.tid, read.comm
	r.conn, r.PID, r.Peer = read.conn, read.conn.pid, read.peer
	r.begin = read.ts + read.dur // the bytes were there when the read returned
	r.read = r.begin
	return r
}

// answer ends a request with a write of its answer, bytes of it its own
// (a write answering a pipeline's requests is shared out).
func (r *request) answer(w socketCall, bytes uint64) {
	r.answered = true
	r.end = w.ts + w.dur
	r.TID, r.Comm = w.tid, w.comm
	r.BytesOut += bytes
}
