package cli

import (
	"strings"
	"syscall"
	"testing"
)

// A crash is told from an ending: by the signal that killed the reader, or
// by Go's trace of a fault in DuckDB's C++ (exit 2); a signal someone sent,
// or a usage error's exit 2, is passed on as it is.
func TestCrashOf(t *testing.T) {
	signaled := func(s syscall.Signal) syscall.WaitStatus { return syscall.WaitStatus(uint32(s)) }
	exited := func(code int) syscall.WaitStatus { return syscall.WaitStatus(uint32(code) << 8) }
	for _, c := range []struct {
		ws     syscall.WaitStatus
		stderr string
		want   string
	}{
		{signaled(syscall.SIGSEGV), "", "SIGSEGV"},
		{signaled(syscall.SIGABRT), "terminate called after throwing", "SIGABRT"},
		{signaled(syscall.SIGPIPE), "", ""},
		{signaled(syscall.SIGINT), "", ""},
		{signaled(syscall.SIGTERM), "", ""},
		{exited(2), "fatal error: unexpected signal during runtime execution\n[signal SIGSEGV: segmentation violation code=0x1]\n\ngoroutine 1 gp=0x1 m=0 [syscall]:", "SIGSEGV"},
		{exited(2), "SIGABRT: abort\nPC=0x4 m=0 sigcode=0\n", "SIGABRT"},
		{exited(2), "panic: runtime error: index out of range\n\ngoroutine 1 [running]:", "panic"},
		{exited(2), "whyslow: --pid 7: the recording holds no such process\n", ""},
		{exited(3), "whyslow: x.db: not a whyslow recording\n", ""},
		{exited(0), "", ""},
	} {
		if got := crashOf(c.ws, []byte(c.stderr)); got != c.want {
			t.Errorf("status %#x, stderr %.40q: %q, want %q", uint32(c.ws), c.stderr, got, c.want)
		}
	}
}

func TestReadsRecording(t *testing.T) {
	for args, want := range map[string]bool{
		"report explain x.db": true, "sql x.db q": true, "export perfetto x.db": true,
		"run -- true": false, "record -o x": false, "watch --dir d": false, "--help": false, "": false,
	} {
		if got := readsRecording(splitArgs(args)); got != want {
			t.Errorf("%q reads a recording: %v, want %v", args, got, want)
		}
	}
}

func splitArgs(s string) []string { return strings.Fields(s) }
