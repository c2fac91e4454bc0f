package capture

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/whyslow/whyslow/internal/event"
)

// connectMidSearch connects to a listener of its own, over and over, from
// sockets whose port range (IP_LOCAL_PORT_RANGE) is nearly all bound: each
// connect searches thousands of ports for a free one, between setting its
// peer's port and taking its own, long enough for the timer tick's sampler
// to describe the socket in between.
const connectMidSearch = `
import errno, resource, select, socket, struct, sys, threading
IP_LOCAL_PORT_RANGE = 51
def ports(s, lo, hi):
    s.setsockopt(socket.IPPROTO_IP, IP_LOCAL_PORT_RANGE, struct.pack('I', hi << 16 | lo))
def wait(s, ev):   # poll, not select: the fds pass 1024
    p = select.poll(); p.register(s, ev); p.poll()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
limit = min(hard, 20000) if hard != resource.RLIM_INFINITY else 20000
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
lo, hi = int(sys.argv[2]), min(int(sys.argv[3]), int(sys.argv[2]) + limit - 1000)
srv = socket.socket()
ports(srv, hi + 1, hi + 1000)   # above the clients'
srv.bind(('127.0.0.1', 0)); srv.listen(64)
bound = []
for p in range(lo, hi - 63):   # the range's top 64 ports stay free
    s = socket.socket()
    try:
        s.bind(('127.0.0.1', p)); bound.append(s)
    except OSError:
        s.close()
def serve():
    while True:
        c, _ = srv.accept()
        c.recv(64); c.send(b'ok'); c.close()   # the server closes first: no TIME_WAIT on a client's port
threading.Thread(target=serve, daemon=True).start()
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    ports(s, lo, hi)
    s.setblocking(False)
    if s.connect_ex(srv.getsockname()) not in (0, errno.EINPROGRESS):
        sys.exit(4)
    wait(s, select.POLLOUT)
    s.send(b'hi')
    while True:
        wait(s, select.POLLIN)
        if not s.recv(64):
            break
    s.close()
print(srv.getsockname()[1])
`

// TestConnectingSocketsKeepTheirPort: a socket described while its connect
// is under way (by the sampler, or a wakeup) has its peer's port before its
// own. Its last description must have both, or the two ends of the
// connection cannot be paired, and an upstream's requests are counted again
// beside its proxy's (found in CI, where a connect's port search was long).
func TestConnectingSocketsKeepTheirPort(t *testing.T) {
	requirePrivileges(t)
	// A socket's own range narrows the machine's: the clients take the
	// bottom of it, the listener a port from the thousand above theirs.
	var sysLow, sysHigh int
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err != nil {
		t.Fatal(err)
	} else if _, err := fmt.Sscan(string(b), &sysLow, &sysHigh); err != nil || sysHigh-sysLow < 4000 {
		t.Fatalf("ip_local_port_range %q: want a range of 4000 ports at least", b)
	}
	portsLow, portsHigh := sysLow, min(sysLow+18000, sysHigh-1000)
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0); err == nil {
		err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_LOCAL_PORT_RANGE, portsHigh<<16|portsLow)
		unix.Close(fd)
		if err != nil {
			t.Skipf("the kernel has no per-socket port range (IP_LOCAL_PORT_RANGE, 6.3): %v", err)
		}
	}
	const connects = 1000
	c := runCaptured(t, Options{Requests: true}, python(t), "-c", connectMidSearch, fmt.Sprint(connects), fmt.Sprint(portsLow), fmt.Sprint(portsHigh))
	// Each socket's last description, the one a recording's file_names keeps.
	last := map[event.FileRef]*event.File{}
	for _, ev := range c.events {
		if f, ok := ev.(*event.File); ok && f.Ref.Kind == event.KindSocketInet {
			last[f.Ref] = f
		}
	}
	inRange := func(port uint16) bool { return int(port) >= portsLow && int(port) <= portsHigh }
	var clients int
	for _, f := range last {
		// A client's peer is the listener, outside the range; an accepted
		// socket's peer is a client's port, inside it.
		if !f.Peer.IsValid() || f.Peer.Port() == 0 || inRange(f.Peer.Port()) {
			continue
		}
		clients++
		if !inRange(f.Local.Port()) {
			t.Errorf("%s described as %v -> %v: its own port is missing", f.Path, f.Local, f.Peer)
		}
	}
	if clients < connects*9/10 {
		t.Errorf("%d connecting sockets described, want most of the %d connects", clients, connects)
	}
}
