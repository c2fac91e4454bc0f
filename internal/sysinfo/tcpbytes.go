package sysinfo

import (
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TCPBytes is an open TCP connection's byte totals, by its socket's inode.
type TCPBytes struct {
	Ino            uint64
	Received, Sent uint64
	Local, Peer    netip.AddrPort
}

// OpenTCPBytes asks the kernel (sock_diag over netlink, what ss -ti reads)
// for the byte totals of every open TCP connection of this network
// namespace: the default level's bytes of connections still open when
// capture ends (those that closed were counted as they closed). Dev is the
// sockets' filesystem's device, as the kernel's records give it. Errors
// leave the list short: the bytes are then said unknown, not zero.
func OpenTCPBytes() (dev uint32, out []TCPBytes) {
	// A socket of our own tells the sockets' device.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		if f, err := l.(*net.TCPListener).File(); err == nil {
			var st unix.Stat_t
			if unix.Fstat(int(f.Fd()), &st) == nil {
				dev = KernelDev(st.Dev)
			}
			f.Close()
		}
		l.Close()
	}
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := netlink.SocketDiagTCPInfo(family)
		if err != nil && len(socks) == 0 {
			continue
		}
		for _, s := range socks {
			if s.InetDiagMsg == nil || s.TCPInfo == nil || s.InetDiagMsg.INode == 0 {
				continue
			}
			id := s.InetDiagMsg.ID
			b := TCPBytes{Ino: uint64(s.InetDiagMsg.INode), Received: s.TCPInfo.Bytes_received, Sent: s.TCPInfo.Bytes_sent,
				Local: addrPort(id.Source, id.SourcePort), Peer: addrPort(id.Destination, id.DestinationPort)}
			if s.InetDiagMsg.State == 8 /* CLOSE_WAIT */ && b.Received > 0 {
				b.Received-- // the FIN's sequence number, counted as a byte
			}
			out = append(out, b)
		}
	}
	return dev, out
}

func addrPort(ip net.IP, port uint16) netip.AddrPort {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(a.Unmap(), port)
}
