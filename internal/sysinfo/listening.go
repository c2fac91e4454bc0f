package sysinfo

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// tcpListen is TCP_LISTEN, a socket's state in /proc/net/tcp.
const tcpListen = 0x0A

// ListeningTCPPorts is the set of local TCP ports with a listening socket
// (IPv4 and IPv6), from /proc/net/tcp and tcp6: the service's end of a
// connection made before whyslow started is the one on such a port.
func (fs FS) ListeningTCPPorts() map[uint16]bool {
	out := map[uint16]bool{}
	for _, l := range fs.listeningSockets(nil) {
		out[l.port] = true
	}
	return out
}

// Listeners is those of pids that hold a listening TCP socket: servers, whose
// waits for a connection or a request are waits for work. A socket is found
// listening in /proc/net/tcp and tcp6 and held in the process's fd table.
func (fs FS) Listeners(pids []int) []int {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return nil
	}
	listening := map[string]bool{}
	for _, l := range fs.listeningSockets(&pfs) {
		listening[fmt.Sprintf("socket:[%d]", l.inode)] = true
	}
	if len(listening) == 0 {
		return nil
	}
	var out []int
	for _, pid := range pids {
		p, err := pfs.Proc(pid)
		if err != nil {
			continue
		}
		fds, err := p.FileDescriptorTargets()
		if err != nil {
			continue
		}
		for _, f := range fds {
			if listening[f] {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// listeningSocket is a listening TCP socket: its port and inode.
type listeningSocket struct {
	port  uint16
	inode uint64
}

// listeningSockets is the host's listening TCP sockets, IPv4 and IPv6, read
// through pfs (nil: opened here).
func (fs FS) listeningSockets(pfs *procfs.FS) []listeningSocket {
	if pfs == nil {
		p, err := procfs.NewFS(fs.path("/proc"))
		if err != nil {
			return nil
		}
		pfs = &p
	}
	var out []listeningSocket
	for _, read := range []func() (procfs.NetTCP, error){pfs.NetTCP, pfs.NetTCP6} { //nolint:staticcheck // procfs's reader of these files: netlink would be a dependency of its own for a list read once
		lines, err := read()
		if err != nil {
			continue // no IPv6, or no /proc/net: none known
		}
		for _, l := range lines {
			if l.St == tcpListen {
				out = append(out, listeningSocket{uint16(l.LocalPort), l.Inode})
			}
		}
	}
	return out
}
