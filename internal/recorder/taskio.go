package recorder

import (
	"fmt"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// ioSnapshot reads the I/O accounting of the target tree's threads (every
// thread on the machine for a system-wide recording), as /proc has it now:
// a thread's bytes and calls over the capture are its last reading (this at
// the end, or its exit) less its first (this at the start, or 0 for one born
// meanwhile). The kernel counts them at every call, so they are exact at the
// default level, which hooks no syscall.
func (s *session) ioSnapshot(phase string) []event.Event {
	var pids []int
	if !s.opts.SystemWide {
		if s.res.TargetPID == 0 {
			return nil
		}
		pids = append([]int{s.res.TargetPID}, sysinfo.Host.Descendants(s.res.TargetPID)...)
	}
	now := monoOf(time.Now())
	var out []event.Event
	for _, t := range sysinfo.Host.ThreadsIO(pids) {
		if t.PID == s.self {
			continue
		}
		out = append(out, &event.IOSnapshot{
			Header: event.Header{Time: now, PID: uint32(t.PID), TID: uint32(t.TID), Comm: event.EncodeText(t.Comm)},
			Phase:  phase,
			IO: event.TaskIO{RChar: t.RChar, WChar: t.WChar, SyscR: t.SyscR, SyscW: t.SyscW,
				ReadBytes: t.ReadBytes, WriteBytes: t.WriteBytes, CancelledWriteBytes: t.CancelledWriteBytes},
		})
	}
	return out
}

// openConnections reads the byte totals of the TCP connections still open
// as capture ends (those that closed were counted as they closed, in the
// kernel): the default level's bytes of a connection it never hooked. Each
// is described again with its addresses: a connection older than an attach
// was known only as socket:[ino].
func openConnections() []event.Event {
	dev, conns := sysinfo.OpenTCPBytes()
	if dev == 0 {
		return nil
	}
	now := monoOf(time.Now())
	out := make([]event.Event, 0, 2*len(conns))
	for _, c := range conns {
		ref := event.FileRef{Dev: dev, Ino: c.Ino, Kind: event.KindSocketInet}
		out = append(out, &event.SockBytes{Header: event.Header{Time: now}, Sock: ref, Received: c.Received, Sent: c.Sent},
			&event.File{Header: event.Header{Time: now}, Ref: ref, Path: fmt.Sprintf("socket:[%d]", c.Ino), Local: c.Local, Peer: c.Peer})
	}
	return out
}
