package watch

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// FuzzServing: any order of socket calls, first bytes and polls — a client
// may send anything, a server answer in pieces — gives triggers that never
// begin after the moment they are found, at most once per request, with
// the state bounded.
func FuzzServing(f *testing.F) {
	f.Add([]byte{0, 1, 5, 1, 2, 50, 3, 0, 200, 1, 1, 9})
	f.Add([]byte{1, 0, 1, 0, 1, 0, 2, 3, 4})
	names := []string{"read", "recvfrom", "write", "sendmsg", "close"}
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := newServing(uint64(100 * ms))
		now := uint64(1)
		type request struct {
			pid   uint32
			begin uint64
		}
		seen := map[request]bool{}
		for i := 0; i+2 < len(ops); i += 3 {
			op, conn, step := ops[i], uint64(ops[i+1]%4), (uint64(ops[i+2])+1)*ms // each call at its own moment: a request is known by its pid and begin
			now += step
			var found []*Trigger
			switch op % 4 {
			case 0, 1:
				c := sock(now, ms, uint32(1+conn%2), names[int(op/4)%len(names)], int64(op%3)-1, conn)
				if tr := s.call(c); tr != nil {
					found = append(found, tr)
				}
			case 2:
				s.payload(&event.Payload{Header: event.Header{PID: uint32(1 + conn%2)}, Conn: event.FileRef{Dev: 8, Ino: conn}, Data: ops[i:]})
			case 3:
				found = s.slow(now + ms)
			}
			for _, tr := range found {
				if tr.At > now+ms {
					t.Fatalf("a request found at %d begins at %d", now, tr.At)
				}
				r := request{tr.PID, tr.At}
				if seen[r] {
					t.Fatalf("request of pid %d begun at %d found twice", tr.PID, tr.At)
				}
				seen[r] = true
			}
		}
		if len(s.conns) > maxConns {
			t.Fatalf("%d connections followed", len(s.conns))
		}
	})
}
