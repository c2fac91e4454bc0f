package event

import (
	"slices"
	"strconv"
)

// A connection's conversation as every reader of it splits it: the calls
// that read and write its bytes, those that open it, and which bytes of a
// server's reads the kernel keeps. One definition: the analyses' SQL asks
// it with the is_read and is_write macros (analysis/source), `report
// requests` and watch in Go, and the kernel's request trigger
// (note_request, bpf/syscall.bpf.h) through bpf/conversation.h, which
// internal/capture/gensyscalls writes from it. The trigger keeps the first
// bytes of a server's turns, the framers cut requests from them
// (internal/analysis/protocol): both must agree on which calls those are,
// and the framers make do with the bytes kept.

// A turn of a connection is what the server read between two of its
// writes (or since it accepted it): a request, or a pipelined batch of
// them. Of each turn the kernel keeps, once, in the read's own record:
//   - its first PayloadLen bytes, whichever of its reads bring them (a
//     server may read a message's header alone first: MariaDB, PHP-FPM);
//   - of a first read longer than PayloadLen, up to PayloadBatchLen: a
//     pipelined batch (Redis, PostgreSQL), whose messages after the first
//     lie past PayloadLen and are each a request;
//   - of each later read, its first PayloadHeadLen bytes: the header of the
//     message it may begin, which the framers follow messages by (PHP-FPM
//     reads each record's header apart).
//
// A message's rest is not needed: its label is in its first bytes
// (protocol.StartBytes), and the framers skip the rest by its length.
const PayloadLen, PayloadBatchLen, PayloadHeadLen = 256, 1024, 16

// PayloadKept is how many of a server's read of n bytes the kernel keeps
// (payload_kept, bpf/conversation.h): first says it begins its turn, and
// kept is how many of its turn's bytes were kept before it.
func PayloadKept(first bool, kept, n int) int {
	if first {
		kept = 0
		if n > PayloadLen {
			return min(n, PayloadBatchLen)
		}
	}
	return min(n, max(PayloadLen-kept, PayloadHeadLen))
}

// PayloadMeta is a recording's meta of what it kept of a server's reads
// (docs/trace-format.md): the first bytes of each turn (payload_bytes), of
// each later read (payload_read_bytes), the most of a long first read
// (payload_batch_bytes); all 0 for none.
func PayloadMeta(turn, read, batch int) map[string]string {
	return map[string]string{"payload_bytes": strconv.Itoa(turn), "payload_read_bytes": strconv.Itoa(read),
		"payload_batch_bytes": strconv.Itoa(batch)}
}

// A Turn follows what the kernel keeps of one connection's reads, as
// note_request does: Read is a server's read of n bytes, first when it
// begins a turn (the first read since the server wrote, or the
// connection's first).
type Turn struct{ kept int }

// Read returns how many of the read's n bytes are kept.
func (t *Turn) Read(first bool, n int) int {
	k := PayloadKept(first, t.kept, n)
	if first {
		t.kept = 0
	}
	t.kept += k
	return k
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
