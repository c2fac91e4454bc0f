package requests

import (
	"sort"

	"github.com/whyslow/whyslow/internal/analysis/protocol"
	"github.com/whyslow/whyslow/internal/event"
)

// A connection's calls are cut into requests by its protocol
// (internal/analysis/protocol): by message, with the protocol's Framer, for
// those whose clients pipeline or whose connections begin with a handshake;
// read-then-write for the rest (cutRequests).

// frameRequests cuts the target's connections into requests: those whose
// protocol frames by message with its Framer, when the recording kept the
// first bytes of every read (everyRead: a header's at least, meta
// payload_read_bytes), the rest by read-then-write. clients are the
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
		p := protocol.Detect(firstRead(conn, bytesOf))
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

// firstRead is the first bytes the server read on a connection.
func firstRead(conn []socketCall, bytesOf map[labelKey]firstBytes) []byte {
	var start []byte
	n := 0
	for _, c := range conn {
		if c.ret > 0 && event.Reads.Has(c.class, c.name) {
			start = append(start, bytesOf[labelKey{c.conn, c.ts}].data...)
			if n++; n == protocol.StartReads || len(start) >= protocol.StartBytes {
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

// opens says whether the call made its connection (event.ConnOpeners).
func opens(c socketCall) bool { return event.OpenedEnd(c.name) != event.SideUnknown }

// serverSide is what one call says of the target's end of its connection
// (event.ConnOpeners, the rule the kernel's request trigger keeps too): the
// server's if it accepted it, or (a connection older than the recording) if
// the first data on it went in; the client's if it connected, or the first
// data went out. decided is false for a call that says neither.
func serverSide(c socketCall) (server, decided bool) {
	switch {
	case opens(c):
		return event.OpenedEnd(c.name) == event.SideServer, true
	case c.ret > 0 && event.Reads.Has(c.class, c.name):
		return true, true
	case c.ret > 0 && event.Writes.Has(c.class, c.name):
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
func cutMessages(conn []socketCall, bytesOf map[labelKey]firstBytes, p *protocol.Protocol) []*request {
	f := p.NewFramer()
	var (
		out, waiting, answered []*request
		seen                   []socketCall // the connection's reads so far
		given                  int          // reads whose bytes a request counts
		readSince              bool         // a read since the last write
	)
	for _, c := range conn {
		in := c.ret > 0 && event.Reads.Has(c.class, c.name)
		outb := c.ret > 0 && event.Writes.Has(c.class, c.name)
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
				r.Protocol = p.Name
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
		case c.name == "close" || (c.ret == 0 && event.Reads.Has(c.class, c.name)):
			waiting, answered = nil, nil
		}
	}
	return out
}

// newRequest is a request whose first bytes read brought.
func newRequest(read socketCall) *request {
	r := &request{firstRead: read.ts}
	r.TID, r.Comm = read.tid, read.comm
	r.conn, r.PID, r.Peer, r.Local = read.conn, read.conn.pid, read.peer, read.local
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

// cutRequests runs each connection's calls, in time order, through the
// request state machine. A connection is the server's if it accepted it, or
// (one older than the recording) if the first data on it went in; one it
// connected is a client's, and its calls cut no requests: clients holds
// those (a server's hops to its upstreams and databases).
func cutRequests(calls []socketCall) (reqs []*request, clients map[connKey]bool) {
	type connState struct {
		decided, server bool
		cur             *request
	}
	conns := map[connKey]*connState{}
	var out []*request
	finish := func(st *connState) {
		if st.cur != nil && st.cur.answered {
			out = append(out, st.cur)
		}
		st.cur = nil
	}
	for _, c := range calls {
		st := conns[c.conn]
		if st == nil {
			st = &connState{}
			conns[c.conn] = st
		}
		in := c.ret > 0 && event.Reads.Has(c.class, c.name)
		outb := c.ret > 0 && event.Writes.Has(c.class, c.name)
		// an accept or a connect says it whatever came before it
		if server, decided := serverSide(c); decided && (!st.decided || opens(c)) {
			st.server, st.decided = server, true
		}
		if !st.server {
			continue
		}
		switch {
		case in:
			if st.cur == nil || st.cur.answered {
				finish(st)
				st.cur = newRequest(c)
			} else if c.blocked {
				st.cur.ClientWaitS += float64(c.dur) / 1e9 // more of the request, late
			}
			st.cur.BytesIn += uint64(c.ret)
		case outb && st.cur != nil:
			st.cur.answer(c, uint64(c.ret))
		case c.name == "close" || (c.ret == 0 && event.Reads.Has(c.class, c.name)):
			finish(st)
		}
	}
	clients = map[connKey]bool{}
	for k, st := range conns {
		finish(st)
		if st.decided && !st.server {
			clients[k] = true
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].begin < out[j].begin })
	return out, clients
}
