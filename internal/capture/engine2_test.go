package capture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"golang.org/x/sys/unix"
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

// TestIOUringDirectBlockFile: the block requests of O_DIRECT io_uring
// operations carry user pages, not the page cache, so their file is the
// operation's. The thread issuing them is in io_uring_enter, whose fd is the
// ring: they were charged to the ring's anon inode (the disk verdict said
// "to anon_inode"); io-wq workers, in no syscall, have a copy of their
// creator's registers (io_uring_enter again), and the SQPOLL thread's name
// nothing. Every way io_uring issues, each by its own thread: inline in
// io_uring_enter (one operation per call, and batches under a block plug),
// io-wq workers (IOSQE_ASYNC), the SQPOLL thread; and registered files,
// whose operations carry an index, not an fd (their io_uring events named
// whatever that number is as an fd). Every request on the file's sectors
// must name it; nearly all its bytes must be seen (a request or two of the
// 256 was, rarely, missing from every process's block events, whichever
// file they named: not what this test is about).
func TestIOUringDirectBlockFile(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Fatal("fio is needed (apt install fio; make deps does it)")
	}
	if _, err := exec.LookPath("filefrag"); err != nil {
		t.Fatal("filefrag is needed (e2fsprogs; make deps installs it)")
	}
	dir := t.TempDir()
	modes := []struct {
		name, issuer string // issuer: the comm of the thread that issues the requests
		extra        []string
	}{
		{"inline", "fio", []string{"--iodepth=1"}},
		{"batched", "fio", []string{"--iodepth=16", "--iodepth_batch_submit=8"}},
		{"io-wq", "iou-wrk-", []string{"--iodepth=4", "--force_async=1"}},
		{"sqpoll", "iou-sqp-", []string{"--iodepth=4", "--sqthread_poll=1"}},
		{"fixed", "fio", []string{"--iodepth=4", "--registerfiles=1"}},
	}
	const size = 4 << 20
	for _, level := range []Level{Default, Syscalls, Full} {
		for _, m := range modes {
			for _, rw := range []string{"randread", "randwrite"} {
				t.Run(level.String()+"/"+m.name+"/"+rw, func(t *testing.T) {
					// a short name, as a user would give
					sub := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(t.Name(), "TestIOUringDirectBlockFile/"), "/", "-"))
					if err := os.Mkdir(sub, 0o755); err != nil {
						t.Fatal(err)
					}
					file := filepath.Join(sub, "uring.dat")
					argv := append([]string{fio, "--name=u", "--filename=" + file, "--rw=" + rw, "--bs=16k",
						"--size=4m", "--ioengine=io_uring", "--direct=1", "--thread", "--output=/dev/null"}, m.extra...)
					c := runCaptured(t, Options{Level: level}, argv...)
					owners := sectorOwners(t, sub)
					op := strings.TrimPrefix(rw, "rand")
					var onFile, byIssuer uint64
					var anon, elsewhere int
					charged := map[string]uint64{} // for the failure message
					for _, b := range eventsOf[*event.Block](c) {
						if b.PID != c.pid {
							continue
						}
						if b.File.Kind == event.KindAnon {
							anon++
						}
						if b.Op.String() != op {
							continue
						}
						got := c.path(b.File)
						charged[fmt.Sprintf("%s: %v %q", b.Comm, b.File.Kind, got)] += uint64(b.Bytes)
						if owners(b.Dev, b.Sector) == file && got != file {
							elsewhere++
						}
						if got == file {
							onFile += uint64(b.Bytes)
							if strings.HasPrefix(b.Comm, m.issuer) {
								byIssuer += uint64(b.Bytes)
							}
						}
					}
					switch {
					case anon > 0 || elsewhere > 0 || onFile < size*7/8:
						t.Errorf("fio's block %ss: %d bytes charged to its file (want %d), %d requests on its sectors charged elsewhere, %d to an anon inode; bytes by issuer and file: %v; lost: %v",
							op, onFile, size, elsewhere, anon, charged, c.lost)
					case byIssuer < onFile/2:
						t.Errorf("%s issued %d bytes of %d: the mode is not what it says; bytes by issuer and file: %v", m.issuer, byIssuer, onFile, charged)
					}
					ops := 0
					for _, u := range eventsOf[*event.Uring](c) {
						if u.Res > 0 && c.path(u.File) == file {
							ops++
						}
					}
					if ops < size/(16<<10) {
						t.Errorf("io_uring operations naming %s: %d, want %d", file, ops, size/(16<<10))
					}
				})
			}
		}
	}
}

// TestIOUringBatchAcrossFiles: a submission of several operations batches
// their block requests in a plug, flushed after the last is submitted, so
// the thread's operation at that time is the last one. Each request must
// still name its own operation's file (fio's first submissions are batches
// of 16 on 4 files; the file that holds each request's sectors says which).
// deep: batches of 128 while another process keeps the disk busy, so that
// requests wait in the scheduler and merge. A request merged into another is
// freed without a completion, and blk-mq stamps every request of a plug with
// one time: its struct's next request, in the same plug, took its entry and
// its file (1 to 3 requests of ~800 in most runs, before block_rq_merge
// finished the entry).
func TestIOUringBatchAcrossFiles(t *testing.T) {
	if _, err := exec.LookPath("filefrag"); err != nil {
		t.Fatal("filefrag is needed (e2fsprogs; make deps installs it)")
	}
	dir := t.TempDir()
	depths := []struct {
		name         string
		depth, batch int
		busy         bool
	}{
		{"", 32, 16, false},
		{"deep/", 256, 128, true},
	}
	for _, level := range []Level{Default, Syscalls} {
		for _, d := range depths {
			for _, rw := range []string{"randread", "randwrite"} {
				t.Run(level.String()+"/"+d.name+rw, func(t *testing.T) {
					sub := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(t.Name(), "TestIOUringBatchAcrossFiles/"), "/", "-"))
					if err := os.Mkdir(sub, 0o755); err != nil {
						t.Fatal(err)
					}
					if d.busy {
						busyDisk(t, filepath.Join(dir, "busy-"+filepath.Base(sub)))
					}
					c := runCaptured(t, Options{Level: level}, "fio", "--name=u", "--directory="+sub, "--nrfiles=4",
						"--file_service_type=random", "--rw="+rw, "--bs=16k", "--size=16m", "--ioengine=io_uring",
						"--direct=1", "--thread", "--output=/dev/null", fmt.Sprintf("--iodepth=%d", d.depth),
						fmt.Sprintf("--iodepth_batch_submit=%d", d.batch))
					checkBatchFiles(t, c, sub, rw)
				})
			}
		}
	}
}

// busyDisk keeps the disk under dir busy with O_DIRECT reads of a file of
// its own (another process, not a target) until the test ends.
func busyDisk(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "busy.dat")
	if out, err := exec.Command("fio", "--name=lay", "--filename="+file, "--size=64m", "--rw=write", "--bs=1m",
		"--direct=1", "--output=/dev/null").CombinedOutput(); err != nil {
		t.Fatalf("laying out %s: %v: %s", file, err, out)
	}
	// --thread: the job is a thread of the process killed at cleanup, not a
	// child that outlived it, reading on for two minutes under the next tests
	cmd := exec.Command("fio", "--name=busy", "--filename="+file, "--size=64m", "--rw=randread", "--bs=4k", "--thread",
		"--direct=1", "--ioengine=libaio", "--iodepth=32", "--time_based", "--runtime=120", "--output=/dev/null")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	time.Sleep(200 * time.Millisecond) // its queue filled
}

// checkBatchFiles: each of fio's block requests on its files in sub names
// the file that holds its sectors.
func checkBatchFiles(t *testing.T, c *captured, sub, rw string) {
	t.Helper()
	owners := sectorOwners(t, sub)
	op := strings.TrimPrefix(rw, "rand")
	var right, wrong int
	for _, b := range eventsOf[*event.Block](c) {
		if b.PID != c.pid || b.Op.String() != op {
			continue
		}
		owner := owners(b.Dev, b.Sector)
		if owner == "" {
			continue
		}
		if got := c.path(b.File); got == owner {
			right++
		} else {
			wrong++
			if wrong <= 3 {
				t.Errorf("a %s at sector %d, in %s, is charged to %q", op, b.Sector, owner, got)
			}
		}
	}
	if wrong > 0 || right < 512 {
		t.Errorf("fio's block %ss on its files: %d name their own, %d another (want at least 512, and none)", op, right, wrong)
	}
}

// sectorOwners maps a disk sector to the file of dir that holds it (by
// filefrag), or "".
func sectorOwners(t *testing.T, dir string) func(dev uint32, sector uint64) string {
	t.Helper()
	type extent struct {
		first, last uint64 // in 512-byte units, from the start of the file system's device
		path        string
	}
	var extents []extent
	var fsDev uint64
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no files in %s: %v", dir, err)
	}
	line := regexp.MustCompile(`^\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+)\.\.\s*(\d+):`)
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Stat(name, &st); err != nil {
			t.Fatal(err)
		}
		fsDev = st.Dev
		out, err := exec.Command("filefrag", "-v", "-b512", name).Output()
		if err != nil {
			t.Fatalf("filefrag %s: %v", name, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if m := line.FindStringSubmatch(l); m != nil {
				first, _ := strconv.ParseUint(m[1], 10, 64)
				last, _ := strconv.ParseUint(m[2], 10, 64)
				extents = append(extents, extent{first, last, name})
			}
		}
	}
	// A request's sector counts from the start of the disk, filefrag's from
	// the start of the partition. A file system on a mapped device (LVM,
	// dm-crypt) cannot be matched: the test says so.
	major, minor := unix.Major(fsDev), unix.Minor(fsDev)
	if _, err := os.Stat(fmt.Sprintf("/sys/dev/block/%d:%d/dm", major, minor)); err == nil {
		t.Skipf("%s is on a mapped device: its sectors are not the disk's", dir)
	}
	var start uint64
	if b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/start", major, minor)); err == nil {
		start, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	kdev := major<<20 | minor // the kernel's dev_t, as block events carry it
	return func(dev uint32, sector uint64) string {
		if uint64(dev) != uint64(kdev) || sector < start {
			return ""
		}
		for _, e := range extents {
			if s := sector - start; s >= e.first && s <= e.last {
				return e.path
			}
		}
		return ""
	}
}

// TestIOUringWorkerWaits: an io-wq worker makes no syscall of its own (its
// registers are a copy of its creator's, in io_uring_enter on the ring), so
// its waits must be named after the operation it works on: a buffered read
// of a file not in the page cache waits in pread64 on that file, at every
// level, with a syscalls row that names the file (there is no other).
func TestIOUringWorkerWaits(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Fatal("fio is needed (apt install fio; make deps does it)")
	}
	dir := t.TempDir()
	const size = 4 << 20
	for _, level := range []Level{Default, Syscalls, Full} {
		t.Run(level.String(), func(t *testing.T) {
			file := filepath.Join(dir, "wrk-"+level.String()+".dat")
			if err := os.WriteFile(file, make([]byte, size), 0o644); err != nil {
				t.Fatal(err)
			}
			dropCache(t, file)
			c := runCaptured(t, Options{Level: level}, fio, "--name=w", "--filename="+file, "--rw=randread", "--bs=16k",
				"--size=4m", "--ioengine=io_uring", "--direct=0", "--force_async=1", "--iodepth=4", "--thread", "--output=/dev/null")
			var reads, ring, other int
			for _, o := range eventsOf[*event.OffCPU](c) {
				if !strings.HasPrefix(o.Comm, "iou-wrk-") || o.State != 'D' {
					continue
				}
				switch o.Syscall {
				case unix.SYS_PREAD64:
					reads++
				case unix.SYS_IO_URING_ENTER:
					ring++
				default:
					other++
				}
			}
			var onFile int
			for _, s := range eventsOf[*event.Syscall](c) {
				if strings.HasPrefix(s.Comm, "iou-wrk-") && s.Nr == unix.SYS_PREAD64 && c.path(s.File) == file {
					onFile++
				}
			}
			if reads == 0 || ring > 0 || other > reads/10 || onFile < reads*9/10 {
				t.Errorf("io-wq workers' disk waits: %d in pread64, %d in io_uring_enter, %d in other calls; %d pread64 rows naming %s",
					reads, ring, other, onFile, file)
			}
		})
	}
}

// dropCache writes file out and drops its pages, so that reading it waits for the disk.
func dropCache(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
}

// TestCollidingStacks: a stack whose bucket in the stacks map another stack
// holds is refused by the kernel; it must still reach user space, whole and
// named, not be counted lost. With one bucket, every stack but the first
// collides.
func TestCollidingStacks(t *testing.T) {
	c := runCaptured(t, Options{Level: Full, stackBuckets: 1},
		"sh", "-c", "sleep 0.02; sleep 0.02 & wait; head -c 100000 /dev/urandom | cat > /dev/null")
	if n := c.lost["stack"]; n > 0 {
		t.Errorf("%d stacks lost", n)
	}
	var waits, named, own int
	distinct := map[string]bool{}
	for _, o := range eventsOf[*event.OffCPU](c) {
		if o.State == 'R' || o.StackID == stackBeforeCapture {
			continue
		}
		waits++
		if o.StackID >= 0 && len(o.Stack) > 0 {
			named++
			distinct[strings.Join(o.Stack, ";")] = true
		}
		if o.StackID >= stackOwnBase {
			own++
		}
	}
	if waits == 0 || named < waits*95/100 || own == 0 || len(distinct) < 3 {
		t.Errorf("%d waits: %d with a named stack (%d distinct), %d sent whole", waits, named, len(distinct), own)
	}
}

// TestSmallWritesIntoLargeFolios: a commit log's shape, 8 KiB written and
// fdatasync'd each time into a region the previous sync cleaned. Where the
// page cache holds large folios, the kernel dirties (and counts) the whole
// folio at each write; the pages counted for the file must be the pages
// written, within a page a write, not the folios'.
func TestSmallWritesIntoLargeFolios(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "wal")
	const writes, size = 200, 8 << 10
	script := `import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644)
os.pwrite(fd, b"\0" * (1 << 20), 0); os.fsync(fd)
for i in range(int(sys.argv[2])):
    os.pwrite(fd, b"w" * 8192, (i % 128) * 8192)
    os.fdatasync(fd)
`
	c := runCaptured(t, Options{}, "python3", "-c", script, file, strconv.Itoa(writes))
	var pages uint64
	for _, d := range eventsOf[*event.Dirtied](c) {
		if c.path(d.File) == file {
			pages += d.Pages
		}
	}
	written := uint64(writes*size) / 4096
	if pages < written || pages > written+256+writes {
		t.Errorf("%d pages counted dirtied for %d writes of 8 KiB (%d pages; the first 1 MiB is 256 more)", pages, writes, written)
	}
}
