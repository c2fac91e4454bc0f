package capture

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed for the capture workloads")
	}
	return p
}

func TestWorkerThreadWrite(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "worker.out")
	script := `
import threading, os, sys
def work():
    with open(sys.argv[1], "wb") as f:
        for _ in range(16):
            f.write(b"x" * 65536)
t = threading.Thread(target=work, name="worker"); t.start(); t.join()
`
	c := runCaptured(t, Options{Level: Full}, python(t), "-c", script, file)
	c.noLoss(t)
	var bytes int64
	tids := map[uint32]bool{}
	for _, s := range c.syscalls("write") {
		if c.path(s.File) != file {
			continue
		}
		bytes += s.Ret
		tids[s.TID] = true
		if s.PID != c.pid {
			t.Errorf("write from pid %d, want %d", s.PID, c.pid)
		}
	}
	if bytes != 1<<20 {
		t.Fatalf("writes to %s: %d bytes, want %d", file, bytes, 1<<20)
	}
	if len(tids) != 1 || tids[c.pid] {
		t.Fatalf("writing tids %v: want one worker thread, not the main thread %d", tids, c.pid)
	}
}

// At the syscalls level small writes are counted in the kernel, not streamed:
// the totals must still name the thread, the file and the bytes.
func TestSyscallsLevelTotals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agg.out")
	script := `
import sys
with open(sys.argv[1], "wb") as f:
    for _ in range(256):
        f.write(b"y" * 4096)
`
	c := runCaptured(t, Options{Level: Syscalls}, python(t), "-c", script, file)
	c.noLoss(t)
	var bytes, count uint64
	for _, a := range eventsOf[*event.SyscallTotals](c) {
		if c.path(a.File) == file && event.SyscallName(int32(a.Nr)) == "write" {
			bytes += a.Bytes
			count += a.Count
		}
	}
	for _, s := range c.syscalls("write") {
		if c.path(s.File) == file {
			bytes += uint64(s.Ret)
			count++
		}
	}
	if bytes != 256*4096 || count != 256 {
		t.Fatalf("syscalls level saw %d writes, %d bytes to %s; want 256, %d", count, bytes, file, 256*4096)
	}
	if n := len(c.syscalls("write")); n > 32 {
		t.Errorf("syscalls level streamed %d of 256 cached writes; they should be aggregated", n)
	}
}

func TestRelativeAndDeletedPaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `
import os, sys
d = sys.argv[1]
dfd = os.open(os.path.join(d, "sub"), os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("viadirfd", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=dfd)
os.write(fd, b"a"); os.close(fd)
os.chdir(d)
fd = os.open("viacwd", os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"b"); os.close(fd)
fd = os.open("doomed", os.O_CREAT | os.O_RDWR, 0o644)
os.unlink("doomed")
os.write(fd, b"c" * 100)
os.close(fd)
`
	c := runCaptured(t, Options{Level: Full}, python(t), "-c", script, dir)
	want := map[string]bool{
		filepath.Join(dir, "sub", "viadirfd"): false,
		filepath.Join(dir, "viacwd"):          false,
		filepath.Join(dir, "doomed"):          false,
	}
	for _, s := range c.syscalls("openat") {
		if p := c.path(s.File); s.Ret >= 0 {
			if _, ok := want[p]; ok {
				want[p] = true
			}
		}
	}
	var deletedWrite bool
	for _, s := range c.syscalls("write") {
		if c.path(s.File) == filepath.Join(dir, "doomed") && s.Ret == 100 {
			deletedWrite = true
		}
	}
	for p, seen := range want {
		if !seen {
			t.Errorf("no openat resolved to %s; paths seen: %v", p, c.pathsUnder(dir))
		}
	}
	if !deletedWrite {
		t.Errorf("the write to the deleted file lost its path; paths seen: %v", c.pathsUnder(dir))
	}
}

func (c *captured) pathsUnder(dir string) []string {
	var out []string
	for _, f := range c.files {
		if strings.HasPrefix(f.Path, dir) {
			out = append(out, f.Path)
		}
	}
	return out
}

func TestChildSync(t *testing.T) {
	c := runCaptured(t, Options{}, "/bin/sh", "-c", "sync; true")
	var syncPID uint32
	for _, s := range c.syscalls("sync") {
		if s.Comm == "sync" && s.PID != c.pid {
			syncPID = s.PID
		}
	}
	if syncPID == 0 {
		t.Fatal("no sync syscall from a child named sync")
	}
	var forked, execed bool
	for _, f := range eventsOf[*event.Fork](c) {
		forked = forked || f.ChildPID == syncPID
	}
	for _, e := range eventsOf[*event.Exec](c) {
		execed = execed || (e.PID == syncPID && strings.HasSuffix(e.Filename, "sync"))
	}
	if !forked || !execed {
		t.Errorf("lifecycle of the sync child: forked %v, exec'd %v", forked, execed)
	}
}

// TestUndescribe: a file is described once; taken out of the kernel's
// table (what a live view does with a name it forgets), it is described
// again when next met.
func TestUndescribe(t *testing.T) {
	dir := t.TempDir()
	again, once := filepath.Join(dir, "again.dat"), filepath.Join(dir, "once.dat")
	script := `
import os, sys, time
for p in sys.argv[1:]:
    with open(p, "w") as f:
        f.write("x")
        os.fsync(f.fileno())
time.sleep(1)
for p in sys.argv[1:]:
    with open(p, "a") as f:
        f.write("y")
        os.fsync(f.fileno())
`
	undescribed := false // once: its first description, before the second round
	c := runCapturedWatching(t, Options{Level: Syscalls}, func(e *Engine, b []event.Event) {
		for _, ev := range b {
			if f, ok := ev.(*event.File); ok && f.Path == again && !undescribed {
				e.Undescribe(f.Ref)
				undescribed = true
			}
		}
	}, python(t), "-c", script, again, once)
	described := map[string]int{}
	for _, f := range eventsOf[*event.File](c) {
		described[f.Path]++
	}
	if described[again] != 2 || described[once] != 1 {
		t.Errorf("described %d times after it was taken out of the table (want 2), the other %d (want 1)",
			described[again], described[once])
	}
}

func TestCallsRingBytes(t *testing.T) {
	for _, c := range []struct {
		events uint32
		cpus   int
		want   uint32
	}{
		{16 << 20, 2, 8 << 20}, {16 << 20, 1, 16 << 20}, {16 << 20, 3, 4 << 20},
		{16 << 20, 64, 1 << 20}, {4096, 2, 4096}, {1 << 20, 8, 1 << 20},
	} {
		if got := callsRingBytes(c.events, c.cpus); got != c.want {
			t.Errorf("callsRingBytes(%d, %d) = %d, want %d", c.events, c.cpus, got, c.want)
		}
	}
}
