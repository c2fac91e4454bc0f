package event

import (
	"fmt"
	"strings"
)

// The kernel's numbers that whyslow names, each defined once here and
// written into SQL from here; the kernel side uses the kernel's own names
// for them (bpf/vmlinux.h), and ops_test.go holds the two to each other.

// PageSize is the size of a page on x86_64, the unit of dirtied and written
// back pages: PAGE_SHIFT of bpf/whyslow.h (a parity test in internal/capture).
const PageSize = 4096

// BlockOp is the REQ_OP_* of a block request (enum req_op).
type BlockOp uint32

// The block operations whyslow names; any other is "other".
const (
	BlockRead        BlockOp = 0 // REQ_OP_READ
	BlockWrite       BlockOp = 1 // REQ_OP_WRITE
	BlockFlush       BlockOp = 2 // REQ_OP_FLUSH
	BlockDiscard     BlockOp = 3 // REQ_OP_DISCARD
	BlockSecureErase BlockOp = 5 // REQ_OP_SECURE_ERASE
	BlockWriteZeroes BlockOp = 9 // REQ_OP_WRITE_ZEROES
)

// blockOps names each, with the kernel's name for it.
var blockOps = []struct {
	op           BlockOp
	name, kernel string
}{
	{BlockRead, "read", "REQ_OP_READ"},
	{BlockWrite, "write", "REQ_OP_WRITE"},
	{BlockFlush, "flush", "REQ_OP_FLUSH"},
	{BlockDiscard, "discard", "REQ_OP_DISCARD"},
	{BlockSecureErase, "secure-erase", "REQ_OP_SECURE_ERASE"},
	{BlockWriteZeroes, "write-zeroes", "REQ_OP_WRITE_ZEROES"},
}

func (o BlockOp) String() string {
	for _, b := range blockOps {
		if b.op == o {
			return b.name
		}
	}
	return "other"
}

// BlockOps are the block operations whyslow names, in the kernel's order.
func BlockOps() []BlockOp {
	out := make([]BlockOp, len(blockOps))
	for i, b := range blockOps {
		out[i] = b.op
	}
	return out
}

// BlockOpsSQL is the named operations as SQL rows (op, name), for
// `(VALUES ...) t(op, name)`: our own fixed words, never input.
func BlockOpsSQL() string {
	rows := make([]string, len(blockOps))
	for i, b := range blockOps {
		rows[i] = fmt.Sprintf("(%d, '%s')", b.op, b.name)
	}
	return strings.Join(rows, ", ")
}

// UringClass groups io_uring operations as the uring_io view reports them.
type UringClass string

const (
	UringRead  UringClass = "read"
	UringWrite UringClass = "write"
	UringSend  UringClass = "send"
	UringRecv  UringClass = "recv"
	UringSync  UringClass = "sync"
	UringOther UringClass = "other"
)

// UringClasses are every class an io_uring operation has, UringOther last.
func UringClasses() []UringClass {
	return []UringClass{UringRead, UringWrite, UringSend, UringRecv, UringSync, UringOther}
}

// uringOps are the io_uring opcodes whyslow classes (enum io_uring_op, uapi:
// numbered once, never renumbered); every other opcode is UringOther. bytes:
// a positive result is the bytes the operation moved.
var uringOps = []uringOp{
	{1, "IORING_OP_READV", UringRead, true},
	{2, "IORING_OP_WRITEV", UringWrite, true},
	{3, "IORING_OP_FSYNC", UringSync, false},
	{4, "IORING_OP_READ_FIXED", UringRead, true},
	{5, "IORING_OP_WRITE_FIXED", UringWrite, true},
	{8, "IORING_OP_SYNC_FILE_RANGE", UringSync, false},
	{9, "IORING_OP_SENDMSG", UringSend, true},
	{10, "IORING_OP_RECVMSG", UringRecv, true},
	{22, "IORING_OP_READ", UringRead, true},
	{23, "IORING_OP_WRITE", UringWrite, true},
	{26, "IORING_OP_SEND", UringSend, true},
	{27, "IORING_OP_RECV", UringRecv, true},
}

// UringOpClass is the class of an io_uring opcode.
func UringOpClass(op uint32) UringClass {
	for _, u := range uringOps {
		if u.op == op {
			return u.class
		}
	}
	return UringOther
}

// UringClassSQL is a CASE expression giving the class of the opcode in
// column col, and UringBytesSQL one giving the bytes an operation moved
// (its result res when positive and the opcode moves bytes, else 0).
func UringClassSQL(col string) string {
	var b strings.Builder
	b.WriteString("CASE")
	for _, c := range UringClasses() {
		if c == UringOther {
			continue
		}
		fmt.Fprintf(&b, " WHEN %s IN (%s) THEN '%s'", col, uringList(func(u uringOp) bool { return u.class == c }), c)
	}
	fmt.Fprintf(&b, " ELSE '%s' END", UringOther)
	return b.String()
}

// UringBytesSQL: see UringClassSQL.
func UringBytesSQL(col, res string) string {
	return fmt.Sprintf("CASE WHEN %s > 0 AND %s IN (%s) THEN %s ELSE 0 END", res, col,
		uringList(func(u uringOp) bool { return u.bytes }), res)
}

type uringOp struct {
	op     uint32
	kernel string
	class  UringClass
	bytes  bool
}

func uringList(keep func(uringOp) bool) string {
	var ops []string
	for _, u := range uringOps {
		if keep(u) {
			ops = append(ops, fmt.Sprint(u.op))
		}
	}
	return strings.Join(ops, ", ")
}
