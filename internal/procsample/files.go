package procsample

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"github.com/whyslow/whyslow/internal/event"
	"golang.org/x/sys/unix"
)

// fileOf is what /proc says of one open file: its kind, and a name for it
// (a path, a TCP/UDP peer, a unix socket's path).
type fileOf struct {
	kind   event.FileKind
	object string
}

// sockets are a process's network namespace's sockets by inode, read from
// /proc/PID/net/{tcp,tcp6,udp,udp6,unix} (the target's namespace, not
// whyslow's) once per tick at most, when a wait on a socket needs them.
type sockets struct {
	read    uint64 // the tick they were read at
	byInode map[uint64]fileOf
}

// readSockets reads the socket tables of pid's network namespace.
func readSockets(root string, pid int) map[uint64]fileOf {
	out := map[uint64]fileOf{}
	fs, err := procfs.NewFS(filepath.Join(root, "proc", strconv.Itoa(pid)))
	if err != nil {
		return out
	}
	add := func(proto string, local net.IP, lport uint64, remote net.IP, rport uint64, ino uint64) {
		name := ""
		if ip, ok := netip.AddrFromSlice(remote); ok && rport != 0 {
			name = proto + " " + netip.AddrPortFrom(ip.Unmap(), uint16(rport)).String()
		} else if ip, ok := netip.AddrFromSlice(local); ok {
			name = proto + " " + netip.AddrPortFrom(ip.Unmap(), uint16(lport)).String() + " (local)"
		}
		out[ino] = fileOf{kind: event.KindSocketInet, object: name}
	}
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		if t, err := read(); err == nil {
			for _, l := range t {
				add("tcp", l.LocalAddr, l.LocalPort, l.RemAddr, l.RemPort, l.Inode)
			}
		}
	}
	for _, read := range []func() (procfs.NetUDP, error){fs.NetUDP, fs.NetUDP6} {
		if t, err := read(); err == nil {
			for _, l := range t {
				add("udp", l.LocalAddr, l.LocalPort, l.RemAddr, l.RemPort, l.Inode)
			}
		}
	}
	if u, err := fs.NetUNIX(); err == nil {
		for _, l := range u.Rows {
			out[l.Inode] = fileOf{kind: event.KindSocketUnix, object: l.Path}
		}
	}
	return out
}

// describeLink tells a file by its /proc/PID/fd link: "socket:[INO]",
// "pipe:[INO]", "anon_inode:[eventfd]", or a path (stat says its kind).
func describeLink(link, fdPath string, sock func(ino uint64) (fileOf, bool)) fileOf {
	switch {
	case strings.HasPrefix(link, "socket:["):
		ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64)
		if err == nil {
			if f, ok := sock(ino); ok {
				return f
			}
		}
		return fileOf{kind: event.KindSocketOther}
	case strings.HasPrefix(link, "pipe:["):
		return fileOf{kind: event.KindPipe, object: link} // its inode: whose other end (Sampler.pipeWriter)
	case strings.HasPrefix(link, "anon_inode:"):
		return fileOf{kind: event.KindAnon, object: strings.TrimPrefix(link, "anon_inode:")}
	case strings.HasPrefix(link, "/"):
		var st unix.Stat_t
		if unix.Stat(fdPath, &st) != nil {
			return fileOf{object: link}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			return fileOf{kind: event.KindRegular, object: link}
		case unix.S_IFBLK:
			return fileOf{kind: event.KindBlock, object: link}
		case unix.S_IFCHR:
			return fileOf{kind: event.KindChar, object: link}
		case unix.S_IFIFO:
			return fileOf{kind: event.KindPipe, object: link}
		case unix.S_IFDIR:
			return fileOf{kind: event.KindDir, object: link}
		}
		return fileOf{object: link}
	}
	return fileOf{}
}

// hasInetSockets says whether pid holds a TCP or UDP socket: a poll of such
// a process counts as waiting on the network (classify.Input.PollOnSockets).
func hasInetSockets(root string, pid int, sock func(ino uint64) (fileOf, bool)) bool {
	dir := filepath.Join(root, "proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if describeLink(link, "", sock).kind == event.KindSocketInet {
			return true
		}
	}
	return false
}
