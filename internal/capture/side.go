package capture

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// sideOf says which end of a conversation a waker spoke from, by the socket
// it was sending on when it woke a thread:
//   - a Unix socket with an address is a server's: an accepted connection
//     takes the listener's address, a client's end has none;
//   - a TCP socket the kernel saw connect (SYN_SENT) is a client's, one it
//     saw accepted (SYN_RECV to ESTABLISHED) a server's;
//   - for a connection made before the capture, the server's port is one
//     that had a listening socket when whyslow first looked (a server on
//     this machine); else the client's port is the
//     ephemeral one the kernel picked for its connect
//     (net.ipv4.ip_local_port_range); when both or neither port is, the
//     lower one is the service's (a test server on port 0 has an ephemeral
//     port too: only the state changes tell it then).
//
// A server that answered wakes a client waiting on it; a client that asked
// wakes a server that was waiting for work. That is what tells a client's
// poll() on its server (a wait) from a server's poll() on its clients (idle).
func sideOf(ws whyslowWakerSock) event.Side {
	switch event.FileKind(ws.F.Kind) {
	case event.KindSocketUnix:
		if ws.Bound != 0 {
			return event.SideServer
		}
		return event.SideClient
	case event.KindSocketInet:
		switch ws.End {
		case sockConnected:
			return event.SideClient
		case sockAccepted:
			return event.SideServer
		}
		return inetSide(ws.Lport, ws.Rport, listeningPorts(), ephemeralPorts())
	}
	return event.SideUnknown
}

// sockConnected and sockAccepted are SOCK_CONNECTED and SOCK_ACCEPTED in
// bpf/peers.bpf.h: the kernel saw the waker's TCP socket connect, or be
// accepted, during the capture.
const (
	sockConnected = 1
	sockAccepted  = 2
)

// inetSide is sideOf for an inet socket with local port l, remote port r,
// whose connection the capture did not see made.
func inetSide(l, r uint16, listening map[uint16]bool, eph portRange) event.Side {
	if l == 0 || r == 0 {
		return event.SideUnknown // not connected: no conversation to take a side in
	}
	switch ll, rl := listening[l], listening[r]; {
	case ll && !rl:
		return event.SideServer
	case rl && !ll:
		return event.SideClient
	}
	le, re := eph.has(l), eph.has(r)
	switch {
	case re && !le:
		return event.SideServer
	case le && !re:
		return event.SideClient
	case l < r:
		return event.SideServer
	case r < l:
		return event.SideClient
	}
	return event.SideUnknown
}

type portRange struct{ lo, hi uint16 }

func (p portRange) has(port uint16) bool { return port >= p.lo && port <= p.hi }

// listeningPorts is the host's listening TCP ports, read once: at the first
// wakeup through a socket older than the capture, near its start.
var listeningPorts = sync.OnceValue(sysinfo.Host.ListeningTCPPorts)

// ephemeralPorts is the host's range for connect's local ports, read once.
var ephemeralPorts = sync.OnceValue(func() portRange {
	r := portRange{32768, 60999} // Linux's default
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return r
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return r
	}
	lo, err1 := strconv.ParseUint(f[0], 10, 16)
	hi, err2 := strconv.ParseUint(f[1], 10, 16)
	if err1 != nil || err2 != nil || lo > hi {
		return r
	}
	return portRange{uint16(lo), uint16(hi)}
})
