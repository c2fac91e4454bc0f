package capture

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// turnsServer serves one TCP connection of its own client thread, reading
// each turn in the sizes given (MSG_WAITALL: each read returns them all)
// and answering it; the client sends each turn's bytes at once, byte i of
// the conversation being i % 251, and waits for the answer.
const turnsServer = `
import socket, sys, threading
turns = [[int(n) for n in t.split(",")] for t in sys.argv[1:]]
conv = bytes(i % 251 for i in range(sum(map(sum, turns))))
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
def client():
    c = socket.create_connection(l.getsockname())
    at = 0
    for t in turns:
        c.sendall(conv[at:at + sum(t)]); at += sum(t)
        c.recv(16)
    c.close()
th = threading.Thread(target=client); th.start()
s, _ = l.accept()
for t in turns:
    for n in t:
        assert len(s.recv(n, socket.MSG_WAITALL)) == n
    s.sendall(b"ok")
th.join(); s.close()
`

// TestServerReadsKeepTheirTurnsFirstBytes: of a server's reads the kernel
// keeps what event.PayloadKept says, in the read's own record: a turn's
// first PayloadLen bytes across its reads (a header read alone, then its
// body), up to PayloadBatchLen of a long first read, PayloadHeadLen of
// each later read; the bytes are the conversation's own, and a client's
// reads keep none.
func TestServerReadsKeepTheirTurnsFirstBytes(t *testing.T) {
	turns := []string{"4,60", "3000,100,40", "100,100,100,20", "7"}
	c := runCaptured(t, Options{Requests: true, Payload: true}, append([]string{python(t), "-c", turnsServer}, turns...)...)
	c.noLoss(t)
	var sizes [][]int
	total := 0
	for _, tn := range turns {
		var reads []int
		for _, f := range bytes.Split([]byte(tn), []byte(",")) {
			var n int
			fmt.Sscan(string(f), &n)
			reads = append(reads, n)
			total += n
		}
		sizes = append(sizes, reads)
	}
	conv := make([]byte, total)
	for i := range conv {
		conv[i] = byte(i % 251)
	}
	payloads := map[uint64]*event.Payload{} // by the read's entry
	for _, p := range eventsOf[*event.Payload](c) {
		payloads[p.Time] = p
	}
	// The server's end is the socket whose first read came before any
	// write of it; its reads come in order.
	var server event.FileRef
	var reads []*event.Syscall
	for _, s := range c.syscalls("recvfrom") {
		if s.Ret <= 0 || s.File.Kind != event.KindSocketInet {
			continue
		}
		if server == (event.FileRef{}) && s.Ret == int64(sizes[0][0]) {
			server = s.File
		}
		if s.File == server {
			reads = append(reads, s)
		} else if p := payloads[s.Time]; p != nil && p.Conn == s.File {
			t.Errorf("the client's read of %d bytes kept %d", s.Ret, len(p.Data))
		}
	}
	at, i := 0, 0
	for _, turn := range sizes {
		var kept event.Turn
		for j, n := range turn {
			if i >= len(reads) {
				t.Fatalf("%d reads of the server seen, want %d", len(reads), i+1)
			}
			r := reads[i]
			i++
			want := kept.Read(j == 0, n)
			p := payloads[r.Time]
			switch {
			case r.Ret != int64(n):
				t.Errorf("read %d returned %d, want %d", i, r.Ret, n)
			case p == nil:
				t.Errorf("read %d of %d bytes kept none, want %d", i, n, want)
			case !bytes.Equal(p.Data, conv[at:at+want]):
				t.Errorf("read %d of %d bytes kept %d (%x...), want its first %d", i, n, len(p.Data), p.Data[:min(8, len(p.Data))], want)
			case p.Returned != int64(n):
				t.Errorf("read %d's bytes say it returned %d, want %d", i, p.Returned, n)
			}
			at += n
		}
	}
	if i != len(reads) {
		t.Errorf("%d reads of the server seen, want %d", len(reads), i)
	}
}
