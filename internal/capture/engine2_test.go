package capture

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

func TestDirectWriteBlockEvents(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "direct.out")
	script := `
import os, sys, mmap
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
buf = mmap.mmap(-1, 1 << 20)   # page-aligned, as O_DIRECT wants
buf.write(b"d" * (1 << 20))
with open(sys.executable, "rb") as other:   # the thread's last call before the write is on another file
    other.read(4096)
os.write(fd, buf)
os.close(fd)
`
	// With per-call hooks the request's file comes from the call in flight,
	// whose arguments are read only when something needs them: here the
	// block request, and the wait inside the write.
	for _, level := range []Level{Default, Syscalls} {
		c := runCaptured(t, Options{Level: level}, python(t), "-c", script, file)
		var bytes uint64
		for _, b := range eventsOf[*event.Block](c) {
			if b.Op.String() == "write" && c.path(b.File) == file {
				bytes += uint64(b.Bytes)
				if b.IssueTime == 0 || b.Time < b.IssueTime {
					t.Errorf("%s level: block request times: issue %d, complete %d", level, b.IssueTime, b.Time)
				}
			}
		}
		if bytes < 1<<20 {
			t.Fatalf("%s level: block writes tied to %s: %d bytes, want at least %d", level, file, bytes, 1<<20)
		}
		if level != Syscalls {
			continue
		}
		var written bool
		for _, s := range c.syscalls("write") {
			if c.path(s.File) == file && s.Ret == 1<<20 && s.Blocked {
				written = true
			}
		}
		if !written {
			t.Errorf("no blocked write of 1 MiB to %s among %d write events", file, len(c.syscalls("write")))
		}
	}
}

func TestMmapMsyncDirties(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mapped.out")
	script := `
import os, sys, mmap
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644)
os.ftruncate(fd, 1 << 20)
m = mmap.mmap(fd, 1 << 20)
m.write(b"m" * (1 << 20))
m.flush()                     # msync(MS_SYNC)
m.close(); os.close(fd)
`
	for _, level := range []Level{Default, Syscalls} {
		c := runCaptured(t, Options{Level: level}, python(t), "-c", script, file)
		var pages uint64
		for _, d := range eventsOf[*event.Dirtied](c) {
			if d.PID == c.pid && c.path(d.File) == file {
				pages += d.Pages
			}
		}
		if pages < 256 {
			t.Errorf("%s level: dirtied pages of %s by the target: %d, want at least 256", level, file, pages)
		}
	}
	// The calls themselves are seen where syscalls are hooked.
	c := runCaptured(t, Options{Level: Syscalls}, python(t), "-c", script, file)
	if len(c.syscalls("msync")) == 0 {
		t.Error("no msync event")
	}
	var mmapped bool
	for _, s := range c.syscalls("mmap") {
		mmapped = mmapped || c.path(s.File) == file
	}
	if !mmapped {
		t.Error("no mmap event naming the file")
	}
}

func TestSocketWaitOffCPU(t *testing.T) {
	script := `
import socket, threading, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
def serve():
    conn, _ = srv.accept()
    time.sleep(0.3)
    conn.sendall(b"late answer")
    conn.close()
threading.Thread(target=serve, name="server").start()
cli = socket.create_connection(("127.0.0.1", port))
cli.recv(100)
`
	// The default level takes no stack of an interruptible wait: the
	// socket tells the reason. --full takes every stack.
	for _, level := range []Level{Default, Full} {
		c := runCaptured(t, Options{Level: level}, python(t), "-c", script)
		var found *event.OffCPU
		for _, o := range eventsOf[*event.OffCPU](c) {
			if o.TID == c.pid && o.State == 'S' && o.Off > 250e6 && o.Reason == event.ReasonNetwork {
				found = o
			}
		}
		if found == nil {
			t.Fatalf("%s level: no 250ms+ off-CPU interval in S state classified as network for the client thread", level)
		}
		inSocket := slices.ContainsFunc(found.Stack, func(f string) bool {
			return strings.HasPrefix(f, "sk_wait_data") || strings.HasPrefix(f, "tcp_recvmsg")
		})
		if level == Full && !inSocket {
			t.Errorf("full level: stack has no socket wait: %v", found.Stack)
		}
		if level == Default && (len(found.Stack) != 0 || found.FileKind != event.KindSocketInet) {
			t.Errorf("default level: stack %v (want none), file kind %v (want the socket)", found.Stack, found.FileKind)
		}
		if found.WakerPID != c.pid || found.WakerTID == c.pid {
			t.Errorf("woken by %d/%d (%s); want the server thread of %d", found.WakerPID, found.WakerTID, found.WakerComm, c.pid)
		}
	}
}

func TestFioIOUring(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Fatal("fio is needed (apt install fio; make deps does it)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "fio.dat")
	c := runCaptured(t, Options{}, fio, "--name=uring", "--ioengine=io_uring", "--rw=randwrite", "--bs=4k",
		"--size=4m", "--filename="+file, "--iodepth=8", "--direct=1")
	var ops int
	for _, u := range eventsOf[*event.Uring](c) {
		if c.path(u.File) == file && u.Res > 0 {
			ops++
		}
	}
	if ops < 1024 {
		t.Fatalf("io_uring operations naming %s: %d, want at least 1024", file, ops)
	}
}

// TestNestedDescribes: the timer tick's sampler can describe a file in the
// middle of another program's describe on the same CPU: io_uring's submit
// describes the operation's file, and the tick, landing inside it, the ring
// the thread waits on. Each description must go out whole and under its own
// file. With one scratch buffer per CPU the tick's overwrote the other:
// fio.dat went out as the ring's anon inode and, marked seen, was never
// described again (TestPathOnSlowDisk/io_uring_O_DIRECT_writes failed 1 run
// in 17). Each describe is held open long enough for ticks to
// land inside it, so that what was rare happens every time.
func TestNestedDescribes(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Fatal("fio is needed (apt install fio; make deps does it)")
	}
	file := filepath.Join(t.TempDir(), "nested.dat")
	c := runCaptured(t, Options{describeHold: 20 * time.Millisecond}, fio, "--name=nested", "--ioengine=io_uring",
		"--rw=write", "--bs=64k", "--size=1m", "--filename="+file, "--iodepth=2", "--output=/dev/null")
	ops := 0
	for _, u := range eventsOf[*event.Uring](c) {
		if u.File.Kind == event.KindRegular {
			ops++
			if got := c.path(u.File); got != file {
				t.Fatalf("an io_uring write's file %+v is described as %q, want %s", u.File, got, file)
			}
		}
	}
	if ops == 0 {
		t.Fatal("no io_uring write on a regular file seen")
	}
	for _, f := range eventsOf[*event.File](c) {
		if f.Ref.Kind == event.KindAnon && strings.HasPrefix(f.Path, "/") {
			t.Errorf("anon inode %+v described with a path, another file's: %s", f.Ref, f.Path)
		}
	}
}

// The lost counters must prove themselves: a ring buffer of one page, flooded
// with full-level syscalls, has to lose events and say so.
func TestLostCounterCountsFlood(t *testing.T) {
	script := `
import os
fd = os.open("/dev/zero", os.O_RDONLY)
for _ in range(200000):
    os.read(fd, 1)
`
	c := runCaptured(t, Options{Level: Full, EventsRingBytes: 4096}, python(t), "-c", script)
	if c.lost["syscall"] == 0 {
		t.Fatalf("flooded a 4 KiB ring with 200000 reads and lost nothing: %v", c.lost)
	}
	got := len(c.syscalls("read"))
	if uint64(got)+c.lost["syscall"] < 200000 {
		t.Errorf("delivered %d + lost %d < 200000 reads", got, c.lost["syscall"])
	}
}
