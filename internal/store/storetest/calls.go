package storetest

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// ByteCalls is a server (pid 10) that accepts (fd 7), connects to a
// backend, receives 100 bytes, sends 50, and reads 4096 from a file; the
// syscalls level's totals add three accept4 calls, whose fds (5, 7, 9) the
// kernel sums as it sums bytes. Bytes moved: 100 in, 50 out, 4096 read.
func ByteCalls(t testing.TB) string {
	r := New(t, "byte-calls", map[string]string{"level": "syscalls"})
	srv := Thread{PID: 10, TID: 10, Comm: "server"}
	listen := event.FileRef{Dev: 8, Ino: 1, Kind: event.KindSocketInet}
	conn := event.FileRef{Dev: 8, Ino: 2, Kind: event.KindSocketInet}
	backend := event.FileRef{Dev: 8, Ino: 3, Kind: event.KindSocketInet}
	data := event.FileRef{Dev: 259, Ino: 12, Kind: event.KindRegular}
	r.Add(srv.Call("accept", 1, 0.1, 3, 7, listen),
		srv.Call("connect", 2, 0.1, 8, 0, backend),
		srv.Call("recvfrom", 3, 0.1, 7, 100, conn),
		srv.Call("sendto", 4, 0.1, 7, 50, conn),
		Totals(srv, "accept4", 5, 9, listen, 3, 5+7+9, 1000),
		Totals(srv, "read", 5, 9, data, 1, 4096, 1000))
	return r.Close()
}
