package event

import (
	"strings"
	"testing"
)

// bpf/syscalls.h is generated from this package's table; its test is
// internal/capture/gensyscalls's.

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
