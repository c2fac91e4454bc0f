package watch

import (
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/protocol"
	"github.com/whyslow/whyslow/internal/event"
)

// serving follows requests live, as `report requests` cuts them after the
// fact but cheaply: on a connection whose first call read (a server's end),
// a request begins when a read returns bytes after the previous answer, and
// is answered by the next write. A protocol's start-up (PostgreSQL's,
// MySQL's handshake) is none, by its framer (protocol.Framer). One still unanswered past the threshold
// fires, while it is still slow; one answered past it fires if the poll
// missed it.
type serving struct {
	over  uint64
	conns map[connKey]*conn
}

type connKey struct {
	pid uint32
	ino uint64
	dev uint32
}

type conn struct {
	client   bool   // its first call wrote: this end asked, it does not serve
	begin    uint64 // the open request's first read returned (0: none open)
	last     uint64 // the connection's latest call
	tid      uint32
	comm     string
	label    string
	pending  string // the first bytes of a read not yet seen to return
	reported bool
	// The connection's protocol, known by its first bytes: one framed by
	// message (PostgreSQL, MySQL, Redis) is cut by its framer, as `report
	// requests` cuts it, so that its start-up is no request.
	known  bool
	framer protocol.Framer
	setup  bool // the read not yet seen to return was start-up only
}

// maxConns bounds the connections followed; past it, the idlest go.
const maxConns = 1 << 16

func newServing(over uint64) *serving { return &serving{over: over, conns: map[connKey]*conn{}} }

// direction says whether a call moves bytes in (+1) or out (-1) of a socket
// (event.Reads, event.Writes: as `report requests` and the kernel's request
// trigger split them).
func direction(nr uint32) int {
	switch {
	case event.Reads.HasNr(int32(nr)):
		return 1
	case event.Writes.HasNr(int32(nr)):
		return -1
	}
	return 0
}

// call follows one socket call.
func (s *serving) call(c *event.Syscall) *Trigger {
	k := c.File.Kind
	if (k != event.KindSocketInet && k != event.KindSocketUnix) || c.Ret <= 0 {
		return nil
	}
	dir := direction(c.Nr)
	if dir == 0 {
		return nil
	}
	key := connKey{pid: c.PID, ino: c.File.Ino, dev: c.File.Dev}
	end := c.Time + c.Dur
	cn := s.conns[key]
	if cn == nil {
		if len(s.conns) >= maxConns {
			s.forgetIdlest()
		}
		cn = &conn{client: dir < 0}
		s.conns[key] = cn
	}
	cn.last = end
	if cn.client {
		return nil
	}
	if dir > 0 {
		if cn.begin == 0 && !cn.setup {
			cn.begin, cn.tid, cn.comm, cn.label, cn.reported = end, c.TID, c.Comm, cn.pending, false
		}
		cn.pending, cn.setup = "", false
		return nil
	}
	// An answer: the request ends with its first write; later writes of the
	// same answer find none open.
	if cn.begin == 0 || end < cn.begin {
		return nil // none open, or an earlier request's answer
	}
	var t *Trigger
	if end-cn.begin > s.over && !cn.reported {
		t = s.trigger(key, cn, fmt.Sprintf("answered after %s", secs(end-cn.begin)))
	}
	cn.begin = 0
	return t
}

// payload names a request by its first bytes. They are taken as the read
// that brings them returns, and may come before its call or after.
func (s *serving) payload(p *event.Payload) {
	key := connKey{pid: p.PID, ino: p.Conn.Ino, dev: p.Conn.Dev}
	cn := s.conns[key]
	if cn == nil {
		if len(s.conns) >= maxConns {
			s.forgetIdlest()
		}
		cn = &conn{}
		s.conns[key] = cn
	}
	label, setup := cn.frame(p.Data, int(p.Returned))
	switch {
	case setup && cn.begin != 0 && cn.label == "": // its read came first and opened a request
		cn.begin = 0
	case setup:
		cn.setup = true
	case cn.begin != 0 && cn.label == "":
		cn.label = label
	default:
		cn.pending = label
	}
}

// frame reads a read's first bytes by the connection's protocol: the label
// of the first request they hold, or setup when they are the connection's
// start-up or authentication alone. n is how many bytes the read returned
// (0: not told, the bytes are all of it): a framer follows messages past
// the kept bytes by their lengths.
func (cn *conn) frame(data []byte, n int) (label string, setup bool) {
	if !cn.known && len(data) > 0 {
		cn.known = true
		if p := protocol.Detect(data); p != nil && p.NewFramer != nil {
			cn.framer = p.NewFramer()
		}
	}
	if cn.framer == nil {
		return protocol.Label(data, false), false
	}
	frames := cn.framer.Feed(data, max(n, len(data)))
	for _, f := range frames {
		if !f.Setup {
			return event.EncodeText(f.Label), false
		}
	}
	return "", len(frames) > 0
}

// slow lists requests open longer than the threshold at now, once each.
func (s *serving) slow(now uint64) []*Trigger {
	var out []*Trigger
	for key, cn := range s.conns {
		if cn.begin != 0 && !cn.reported && now > cn.begin && now-cn.begin > s.over {
			out = append(out, s.trigger(key, cn, fmt.Sprintf("unanswered after %s", secs(now-cn.begin))))
		}
	}
	return out
}

func (s *serving) trigger(key connKey, cn *conn, how string) *Trigger {
	cn.reported = true
	what := "a request"
	if cn.label != "" {
		what = cn.label
	}
	return &Trigger{Kind: KindSlowRequest, At: cn.begin, PID: key.pid, TID: cn.tid, Comm: cn.comm,
		Detail: what + ", " + how}
}

// unanswered says whether pid's request that began at begin is still open.
func (s *serving) unanswered(pid uint32, begin uint64) bool {
	for k, cn := range s.conns {
		if k.pid == pid && cn.begin == begin {
			return true
		}
	}
	return false
}

// forget drops connections quiet since before.
func (s *serving) forget(before uint64) {
	for k, cn := range s.conns {
		if cn.last < before && cn.begin == 0 {
			delete(s.conns, k)
		}
	}
}

func (s *serving) forgetIdlest() {
	times := make([]uint64, 0, len(s.conns))
	for _, cn := range s.conns {
		times = append(times, cn.last)
	}
	cut := kthNewest(times, maxConns/2)
	for k, cn := range s.conns {
		if cn.last < cut {
			delete(s.conns, k)
		}
	}
}
