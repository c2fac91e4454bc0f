package event

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The kernel side and Go must agree on every syscall number and class.
func TestSyscallTableMatchesBPF(t *testing.T) {
	src, err := os.ReadFile("../../bpf/syscalls.h")
	if err != nil {
		t.Fatal(err)
	}
	nums := map[string]uint32{}
	for _, m := range regexp.MustCompile(`NR_(\w+) = (\d+)`).FindAllStringSubmatch(string(src), -1) {
		n, _ := strconv.Atoi(m[2])
		nums[m[1]] = uint32(n)
	}
	classes := map[string]Class{}
	for _, m := range regexp.MustCompile(`CLS_(\w+) = (\d+)`).FindAllStringSubmatch(string(src), -1) {
		n, _ := strconv.Atoi(m[2])
		classes[m[1]] = Class(n)
	}
	if len(nums) != len(syscalls) {
		t.Errorf("bpf/syscalls.h has %d syscalls, Go %d", len(nums), len(syscalls))
	}
	// each case block: "case NR_a: case NR_b: ... return CLS_X;"
	block := regexp.MustCompile(`((?:case NR_\w+:\s*)+)\s*return CLS_(\w+);`)
	one := regexp.MustCompile(`NR_(\w+)`)
	for _, b := range block.FindAllStringSubmatch(string(src), -1) {
		cls := classes[b[2]]
		for _, n := range one.FindAllStringSubmatch(b[1], -1) {
			nr, ok := nums[n[1]]
			if !ok {
				t.Errorf("NR_%s used but not defined", n[1])
				continue
			}
			info, ok := syscalls[nr]
			if !ok || info.name != n[1] || info.class != cls {
				t.Errorf("%s (%d): Go has %+v, BPF class %s", n[1], nr, info, cls)
			}
		}
	}
}

func TestClassNames(t *testing.T) {
	for c := ClassRead; c <= ClassUnlink; c++ {
		back, ok := ClassByName(c.String())
		if !ok || back != c {
			t.Errorf("class %d round-trips to %d", c, back)
		}
	}
	if SyscallName(-1) != "" || SyscallName(1) != "write" || SyscallName(999) != "syscall_999" {
		t.Error("SyscallName")
	}
}

// The syscalls that move bytes are listed in SQL exactly once each, and only
// those: the io view's bytes column and the analyses read from this list.
// accept, accept4 and connect return a new fd or 0, not bytes.
func TestByteSyscallsSQL(t *testing.T) {
	list := ByteSyscallsSQL()
	for _, s := range syscalls {
		n := strings.Count(list, "'"+s.name+"'")
		if SyscallMovesBytes(s.name) && n != 1 || !SyscallMovesBytes(s.name) && n != 0 {
			t.Errorf("%s appears %d times in %s", s.name, n, list)
		}
		if SyscallMovesBytes(s.name) && !s.class.MovesBytes() {
			t.Errorf("%s moves bytes, its class %s does not", s.name, s.class)
		}
	}
	for _, name := range []string{"accept", "accept4", "connect"} {
		if strings.Contains(list, "'"+name+"'") {
			t.Errorf("%s counted as moving bytes", name)
		}
	}
	for _, name := range []string{"read", "recvfrom", "sendmsg", "sendfile"} {
		if !strings.Contains(list, "'"+name+"'") {
			t.Errorf("%s not counted as moving bytes", name)
		}
	}
}
