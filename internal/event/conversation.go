package event

import "slices"

// A connection's conversation as every reader of it splits it: the calls
// that read and write its bytes, and those that open it. One definition:
// the analyses' SQL asks it with the is_read and is_write macros
// (analysis/source), `report requests` and watch in Go, and the kernel's
// request trigger (note_request, bpf/syscall.bpf.h) through
// bpf/conversation.h, which internal/capture/gensyscalls writes from it. The
// trigger sends the first bytes of a server's reads, the framers cut
// requests from them (internal/analysis/protocol): both must agree on which
// calls those are, and the framers make do with the bytes sent.

// PayloadLen and PayloadReadLen: of a server's read on a connection
// (--requests), the kernel sends the first PayloadLen bytes, or, of a read
// of more, its first PayloadReadLen (a payload_read_event, rarer: a
// pipelined batch, a long statement). Enough for a protocol's first bytes
// (protocol.StartBytes) and a label; the framers follow messages past them
// by their lengths.
const PayloadLen, PayloadReadLen = 128, 1024

// PayloadKept is how many of a read's n bytes the kernel sends.
func PayloadKept(n int) int {
	if n > PayloadLen {
		return min(n, PayloadReadLen)
	}
	return n
}

// Direction tells reads from writes among calls that move bytes: a class,
// and the net calls that go the same way (a recv is a read, a send a
// write). sendfile, splice and copy_file_range are neither: the file a row
// names is the one they read from, the bytes go to another.
type Direction struct {
	Class Class
	Net   []string
}

var (
	Reads  = Direction{ClassRead, []string{"recvfrom", "recvmsg"}}
	Writes = Direction{ClassWrite, []string{"sendto", "sendmsg"}}
)

// Has reports whether a call of class named name goes this way.
func (d Direction) Has(class, name string) bool {
	return class == d.Class.String() || slices.Contains(d.Net, name)
}

// HasNr reports whether the syscall numbered nr goes this way.
func (d Direction) HasNr(nr int32) bool {
	return nr >= 0 && SyscallClass(uint32(nr)) == d.Class || slices.Contains(d.Net, SyscallName(nr))
}

// ConnOpener is a call that opens a connection, and the end of it that it
// makes the caller's.
type ConnOpener struct {
	Name string
	End  Side
}

// ConnOpeners: accepting makes the server's end, connecting the client's.
// A connection opened before the recording is told by its first data: a
// read is the server's end (it was asked), a write the client's.
var ConnOpeners = []ConnOpener{{"accept", SideServer}, {"accept4", SideServer}, {"connect", SideClient}}

// OpenedEnd is the end of a connection the call named name opens for its
// caller, SideUnknown for a call that opens none.
func OpenedEnd(name string) Side {
	for _, o := range ConnOpeners {
		if o.Name == name {
			return o.End
		}
	}
	return SideUnknown
}
