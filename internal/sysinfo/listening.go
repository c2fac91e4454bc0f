package sysinfo

import "github.com/prometheus/procfs"

// tcpListen is TCP_LISTEN, a socket's state in /proc/net/tcp.
const tcpListen = 0x0A

// ListeningTCPPorts is the set of local TCP ports with a listening socket
// (IPv4 and IPv6), from /proc/net/tcp and tcp6: the service's end of a
// connection made before whyslow started is the one on such a port.
func (fs FS) ListeningTCPPorts() map[uint16]bool {
	out := map[uint16]bool{}
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return out
	}
	for _, read := range []func() (procfs.NetTCP, error){pfs.NetTCP, pfs.NetTCP6} { //nolint:staticcheck // procfs's reader of these files: netlink would be a dependency of its own for a list read once
		lines, err := read()
		if err != nil {
			continue // no IPv6, or no /proc/net: no port known
		}
		for _, l := range lines {
			if l.St == tcpListen {
				out[uint16(l.LocalPort)] = true
			}
		}
	}
	return out
}
