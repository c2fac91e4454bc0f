package event

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// kernelEnum returns the members of enum name in bpf/vmlinux.h: the numbers
// the kernel side compiles against.
func kernelEnum(t *testing.T, name string) map[string]int {
	t.Helper()
	src, err := os.ReadFile("../../bpf/vmlinux.h")
	if err != nil {
		t.Fatal(err)
	}
	body := regexp.MustCompile(`(?s)\nenum ` + name + ` \{\n(.*?)\n\};`).FindSubmatch(src)
	if body == nil {
		t.Fatalf("enum %s not in bpf/vmlinux.h", name)
	}
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(\w+) = (-?\d+),`).FindAllStringSubmatch(string(body[1]), -1) {
		out[m[1]], _ = strconv.Atoi(m[2])
	}
	return out
}

func TestBlockOpsAreTheKernels(t *testing.T) {
	kernel := kernelEnum(t, "req_op")
	for _, b := range blockOps {
		if v, ok := kernel[b.kernel]; !ok || BlockOp(v) != b.op {
			t.Errorf("%s (%s) is %d here, %d (present %v) in the kernel", b.name, b.kernel, b.op, v, ok)
		}
		if b.op.String() != b.name || !strings.Contains(BlockOpsSQL(), "("+strconv.Itoa(int(b.op))+", '"+b.name+"')") {
			t.Errorf("%s: String %q, SQL %s", b.kernel, b.op.String(), BlockOpsSQL())
		}
	}
	if BlockOp(kernel["REQ_OP_ZONE_APPEND"]).String() != "other" {
		t.Error("an operation not named is not other")
	}
}

// The SQL's classes and the kernel side's: uring.bpf.h names the syscall
// whose work each opcode does (an io thread's waits are named after it);
// an opcode classed read, write, send, recv or sync here does the work of a
// syscall of that class there.
func TestUringOpsAreTheKernels(t *testing.T) {
	kernel := kernelEnum(t, "io_uring_op")
	for _, u := range uringOps {
		if v, ok := kernel[u.kernel]; !ok || uint32(v) != u.op {
			t.Errorf("%s is %d here, %d (present %v) in the kernel", u.kernel, u.op, v, ok)
		}
	}
	src, err := os.ReadFile("../../bpf/uring.bpf.h")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)uring_op_syscall\(__u8 op\)\n\{(.*?)\n\}`).FindSubmatch(src)
	if fn == nil {
		t.Fatal("uring_op_syscall not found in bpf/uring.bpf.h")
	}
	nrs := map[string]uint32{}
	for _, s := range TracedSyscalls() {
		nrs[s.Name] = s.Nr
	}
	syscallClass := map[UringClass][]Class{UringRead: {ClassRead}, UringWrite: {ClassWrite},
		UringSend: {ClassNet}, UringRecv: {ClassNet}, UringSync: {ClassSync}}
	mapped := 0
	for _, blk := range regexp.MustCompile(`((?:case IORING_OP_\w+:\s*)+)\s*return NR_(\w+);`).FindAllSubmatch(fn[1], -1) {
		nr, ok := nrs[string(blk[2])]
		if !ok {
			t.Errorf("uring_op_syscall returns NR_%s, not a traced syscall", blk[2])
			continue
		}
		for _, m := range regexp.MustCompile(`IORING_OP_\w+`).FindAll(blk[1], -1) {
			mapped++
			op, ok := kernel[string(m)]
			if !ok {
				t.Errorf("%s is not in the kernel's enum", m)
				continue
			}
			c := UringOpClass(uint32(op))
			if want, ok := syscallClass[c]; ok && SyscallClass(nr) != want[0] {
				t.Errorf("%s: class %s here, the kernel side names it %s (%s)", m, c, blk[2], SyscallClass(nr))
			}
		}
	}
	if mapped < 10 {
		t.Errorf("only %d opcodes mapped in uring_op_syscall", mapped)
	}
	for _, u := range uringOps {
		if !regexp.MustCompile(`case ` + u.kernel + `:`).Match(fn[1]) {
			t.Errorf("%s is classed here but uring_op_syscall does not name its syscall", u.kernel)
		}
	}
}

func TestUringSQL(t *testing.T) {
	class, bytes := UringClassSQL("u.opcode"), UringBytesSQL("u.opcode", "u.res")
	for _, want := range []string{"WHEN u.opcode IN (1, 4, 22) THEN 'read'", "WHEN u.opcode IN (3, 8) THEN 'sync'", "ELSE 'other' END"} {
		if !strings.Contains(class, want) {
			t.Errorf("%s lacks %s", class, want)
		}
	}
	if !strings.Contains(bytes, "u.res > 0 AND u.opcode IN (1, 2, 4, 5, 9, 10, 22, 23, 26, 27) THEN u.res") {
		t.Errorf("bytes: %s", bytes)
	}
	if UringOpClass(0) != UringOther || UringOpClass(27) != UringRecv {
		t.Error("UringOpClass")
	}
}
