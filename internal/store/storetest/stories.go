package storetest

import (
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// Story is a recording shaped like a case whyslow exists for, so that what
// the analyses say about it means something.
type Story struct {
	Name  string
	meta  func() map[string]string
	build func(*Recording) string
}

// Stories are every story, for tests that run each analysis on each.
var Stories = []Story{
	{"second-run", secondRunMeta, SecondRun},
	{"lock-held", lockHeldMeta, LockHeld},
	{"cpu-bound", cpuBoundMeta, CPUBound},
	{"slow-request", slowRequestMeta, SlowRequest},
	{"temp-files", tempFilesMeta, TempFiles},
}

// Record builds the story's recording in t's temporary directory and returns its path.
func (s Story) Record(t testing.TB) string {
	t.Helper()
	return s.build(New(t, s.Name, s.meta()))
}

// The stories below are recordings shaped like the cases whyslow exists for,
// so that what the analyses say about them means something. Each returns the
// recording's path. Times are milliseconds from the recording's start.

const mib = 1 << 20

var (
	slowDisk = uint32(254<<20 | 16) // vdb
	nvme     = uint32(259 << 20)    // nvme0n1
	tmpfs    = uint32(45)           // 0:45
	sockfs   = uint32(8)            // 0:8
)

func file(dev uint32, ino uint64) event.FileRef {
	return event.FileRef{Dev: dev, Ino: ino, Gen: 1, Kind: event.KindRegular}
}

func describe(ms float64, ref event.FileRef, path string, size uint64) *event.File {
	return &event.File{Header: event.Header{Time: At(ms)}, Ref: ref, Path: path, Size: size}
}

var (
	throttleStack = []string{"balance_dirty_pages", "balance_dirty_pages_ratelimited_flags", "generic_perform_write",
		"ext4_buffered_write_iter", "vfs_write", "ksys_write"}
	fsyncStack = []string{"io_schedule", "folio_wait_bit_common", "folio_wait_writeback", "__filemap_fdatawait_range",
		"file_write_and_wait_range", "ext4_sync_file", "do_fsync"}
	flockStack  = []string{"schedule", "locks_lock_inode_wait", "__do_sys_flock", "do_syscall_64"}
	futexStack  = []string{"schedule", "futex_wait_queue", "futex_wait", "do_futex", "__x64_sys_futex"}
	waitStack   = []string{"schedule", "do_wait", "kernel_wait4", "__do_sys_wait4"}
	readStack   = []string{"io_schedule", "folio_wait_bit_common", "filemap_get_pages", "filemap_read", "vfs_read"}
	acceptStack = []string{"schedule", "schedule_timeout", "inet_csk_accept", "do_accept", "__sys_accept4"}
)

// SecondRun is mystery 3 of the Nancy Drew article, at the syscalls level: a
// writer (python3, pid 1000) writes 48 MiB to /mnt/slow/out2 and is throttled
// for dirtying pages faster than the disk takes them, because the disk is busy
// writing back /mnt/slow/out1, dirtied by an earlier run before the recording;
// cp (pid 1100) dirties /mnt/slow/big.iso meanwhile. It ends with an fsync
// that a `sync` (pid 1200) overlaps, and leaves 16 MiB of its own to be
// written after it exited.
func SecondRun(r *Recording) string {
	py := Thread{1000, 1000, "python3"}
	cp := Thread{1100, 1100, "cp"}
	syncer := Thread{1200, 1200, "sync"}
	flusher := Thread{60, 60, "kworker/u8:2"}
	out1, out2, iso := file(slowDisk, 11), file(slowDisk, 12), file(slowDisk, 13)
	meta := event.FileRef{Dev: slowDisk, Ino: 1, Gen: 0, Kind: event.KindBlock}
	script := file(nvme, 77)
	r.Device(Device{Dev: slowDisk, Name: "vdb"})
	r.Device(Device{Dev: nvme, Name: "nvme0n1"})

	r.Add(&event.Exec{Header: py.At(0), PPID: 999, Filename: "/usr/bin/python3", Args: []string{"python3", "writer.py", "/mnt/slow/out2", "48"}},
		describe(1, script, "/home/ann/writer.py", 812), describe(2, out2, "/mnt/slow/out2", 0),
		describe(3, out1, "/mnt/slow/out1", 48*mib), describe(4, iso, "/mnt/slow/big.iso", 1<<30),
		describe(5, meta, "/dev/vdb", 0))
	r.Add(Totals(py, "read", 1, 2, script, 2, 812, 3000), Totals(py, "openat", 2, 2, out2, 1, 0, 9000))

	// 27 writes of 1 MiB throttled for 180 ms each, 21 that were not.
	for k := 0; k < 27; k++ {
		b := 200 + 200*float64(k)
		r.Add(py.Blocked("write", b+5, 190, 3, mib, out2),
			r.Off(py, b+10, b+190, event.ReasonDirtyThrottle, "write", Thread{}, 0.05, throttleStack...),
			&event.Throttle{Header: py.At(b + 190), Pause: MS(180), Period: MS(200), Dirtied: 256, BDIDev: slowDisk})
	}
	for s := 0; s < 3; s++ {
		from := 1000 + 1500*float64(s)
		r.Add(Totals(py, "write", from, from+900, out2, 7, 7*mib, 400_000))
	}
	// fsync at the end, overlapped by someone's sync.
	r.Add(py.Blocked("fsync", 5600, 350, 3, 0, out2),
		r.Off(py, 5605, 5945, event.ReasonSync, "fsync", flusher, 0.1, fsyncStack...),
		py.Call("close", 5952, 0.01, 3, 0, out2))
	r.Add(&event.Exec{Header: syncer.At(5500), PPID: 900, Filename: "/usr/bin/sync", Args: []string{"sync"}},
		syncer.Blocked("sync", 5550, 420, -1, 0, event.FileRef{}),
		&event.Exit{Header: syncer.At(5975), GroupDead: true})
	for s := 1; s <= 6; s++ {
		r.Add(&event.CPUTime{Header: py.At(1000 * float64(s)), OnCPU: MS(800.0 / 6)})
	}
	r.Add(&event.Exit{Header: py.At(6000), GroupDead: true})

	// Who dirtied what: the writer its file, cp the image.
	r.Add(&event.Dirtied{Header: py.At(200), Last: At(5600), File: out2, Pages: 12288})
	for s := 0; s < 2; s++ {
		r.Add(&event.Dirtied{Header: cp.At(1000 + 1000*float64(s)), Last: At(1900 + 1000*float64(s)), File: iso, Pages: 1280})
	}
	// The disk during the waits: the flusher writes out1 (dirtied before the
	// recording), big.iso (cp's), out2 (the writer's own) and the journal.
	for n := 0; n < 62; n++ {
		k := n % 27
		at := 200 + 200*float64(k) + 30 + 50*float64(n/27)
		f, bytes := out1, uint32(mib)
		switch {
		case n >= 58:
			f, bytes = meta, 64<<10
		case n >= 50:
			f = out2
		case n >= 40:
			f = iso
		}
		r.Add(Block(flusher, at, 2, 6, slowDisk, 1, bytes, uint64(n)*2048, f))
	}
	r.Add(&event.Writeback{Header: flusher.At(5500), File: out1, Pages: 10240, Dur: MS(5200)},
		&event.Writeback{Header: flusher.At(5500), File: iso, Pages: 2560, Dur: MS(4000)})
	// After the writer exited: its last 16 MiB.
	for n := 0; n < 16; n++ {
		r.Add(Block(flusher, 6050+20*float64(n), 1, 15, slowDisk, 1, mib, 200000+uint64(n)*2048, out2))
	}
	return r.Close()
}

// secondRunMeta is the metadata `whyslow run` writes for SecondRun.
func secondRunMeta() map[string]string {
	return map[string]string{"level": "syscalls", "scope": "command", "command": "python3\x00writer.py\x00/mnt/slow/out2\x0048",
		"target_pid": "1000", "target_start_mono": strconv.FormatUint(At(0), 10), "target_end_mono": strconv.FormatUint(At(6000), 10),
		"duration_ns": strconv.FormatUint(MS(6500), 10), "exit_code": "0", "dirty_at_exit": strconv.Itoa(16 * mib),
		"target_user_ns": strconv.FormatUint(MS(380), 10), "target_system_ns": strconv.FormatUint(MS(420), 10),
		"recording": "/var/tmp/second-run.db"}
}

// LockHeld is `sh -c 'flock /tmp/lk true'` (pid 2000) while another flock
// (pid 1990) holds /tmp/lk for 1.5 s: sh waits for its child, which waits for
// the lock. Full level: every I/O call streamed.
func LockHeld(r *Recording) string {
	sh := Thread{2000, 2000, "sh"}
	fl := Thread{2001, 2001, "flock"}
	holder := Thread{1990, 1990, "flock"}
	lk := event.FileRef{Dev: tmpfs, Ino: 4242, Gen: 7, Kind: event.KindRegular}
	libc := file(nvme, 1301)

	r.Add(&event.Exec{Header: sh.At(0), PPID: 1, Filename: "/bin/sh", Args: []string{"sh", "-c", "flock /tmp/lk true"}},
		describe(0.5, libc, "/usr/lib/x86_64-linux-gnu/libc.so.6", 2<<20),
		sh.Call("openat", 0.4, 0.02, 3, 3, libc), sh.Call("read", 0.5, 0.01, 3, 832, libc), sh.Call("close", 0.6, 0.005, 3, 0, libc),
		&event.Fork{Header: sh.At(3), ChildPID: 2001, ChildTID: 2001},
		r.Off(sh, 4, 1496, event.ReasonChild, "wait4", fl, 0.5, waitStack...))
	open := fl.Call("openat", 6, 0.02, 3, 3, lk)
	open.Flags = 0o100 | 0o400 // O_CREAT | O_NOCTTY, as flock(1) opens its file
	r.Add(&event.Exec{Header: fl.At(5), PPID: 2000, Filename: "/usr/bin/flock", Args: []string{"flock", "/tmp/lk", "true"}},
		describe(6, lk, "/tmp/lk", 0), open,
		fl.Blocked("flock", 7, 1480, 3, 0, lk),
		r.Off(fl, 7.01, 1487, event.ReasonLock, "flock", holder, 0.2, flockStack...),
		fl.Call("close", 1493, 0.01, 3, 0, lk),
		&event.Exit{Header: holder.At(1486.5), GroupDead: true},
		&event.CPUTime{Header: fl.At(1494), OnCPU: MS(9)},
		&event.Exit{Header: fl.At(1495), GroupDead: true},
		&event.CPUTime{Header: sh.At(1498), OnCPU: MS(5)},
		&event.Exit{Header: sh.At(1499), GroupDead: true})
	r.Device(Device{Dev: nvme, Name: "nvme0n1"})
	return r.Close()
}

// lockHeldMeta is the metadata `whyslow run` writes for LockHeld.
func lockHeldMeta() map[string]string {
	return map[string]string{"level": "full", "scope": "command", "command": "sh\x00-c\x00flock /tmp/lk true",
		"target_pid": "2000", "target_start_mono": strconv.FormatUint(At(0), 10), "target_end_mono": strconv.FormatUint(At(1500), 10),
		"duration_ns": strconv.FormatUint(MS(1600), 10), "exit_code": "0", "dirty_at_exit": "0",
		"recording": "/var/tmp/lock.db"}
}

// CPUBound is a compressor (pid 3000) whose main thread waits for its worker
// thread (tid 3001), which runs on CPU for most of 2 s: it reads 64 MiB
// (the first read from the disk), writes 20 MiB, and makes and removes four
// temporary files. A CPU hog elsewhere preempts it now and then.
func CPUBound(r *Recording) string {
	main := Thread{3000, 3000, "compress"}
	w := Thread{3000, 3001, "compress-w"}
	hog := Thread{3500, 3500, "stress"}
	in, out := file(nvme, 900), file(nvme, 901)
	dir := event.FileRef{Dev: tmpfs, Ino: 50, Gen: 1, Kind: event.KindDir}
	r.Device(Device{Dev: nvme, Name: "nvme0n1"})

	r.Add(&event.Exec{Header: main.At(0), PPID: 1, Filename: "/usr/bin/compress", Args: []string{"compress", "/data/in.txt", "/data/out.gz"}},
		describe(0.5, in, "/data/in.txt", 64*mib), describe(0.6, out, "/data/out.gz", 0), describe(0.7, dir, "/tmp/7f3a9c2e", 0),
		main.Call("openat", 0.5, 0.02, 3, 3, in), main.Call("openat", 0.6, 0.03, 4, 4, out),
		&event.Fork{Header: main.At(2), ChildPID: 3000, ChildTID: 3001},
		r.Off(main, 3, 1995, event.ReasonLock, "futex", w, 0.3, futexStack...))
	// The worker: reads, the first from the disk.
	r.Add(w.Blocked("pread64", 3, 14, 3, 4*mib, in),
		r.Off(w, 3.5, 15.5, event.ReasonDiskRead, "pread64", Thread{}, 0.05, readStack...))
	for n := 0; n < 3; n++ {
		r.Add(Block(w, 6+3*float64(n), 0.5, 2, nvme, 0, 128<<10, 4096+uint64(n)*256, in))
	}
	for n := 1; n < 16; n++ {
		r.Add(w.Call("pread64", 20+110*float64(n), 1.5, 3, 4*mib, in))
	}
	for n := 0; n < 20; n++ {
		r.Add(w.Call("write", 35+90*float64(n), 0.8, 4, mib, out))
	}
	for n := 0; n < 4; n++ {
		part := event.FileRef{Dev: tmpfs, Ino: 60 + uint64(n), Gen: 1, Kind: event.KindRegular}
		at := 105 + 400*float64(n)
		open := w.Call("openat", at, 0.05, 5, 5, part)
		open.Flags = 0o100 | 0o1 // O_CREAT | O_WRONLY
		r.Add(describe(at, part, fmt.Sprintf("/tmp/7f3a9c2e/%d.part", n), 0), open,
			w.Call("write", at+1, 0.6, 5, mib, part), w.Call("close", at+2, 0.01, 5, 0, part),
			&event.Unlink{Header: w.At(at + 300), Dur: MS(0.04), Nr: Nr("unlinkat"), Dir: dir, Name: fmt.Sprintf("%d.part", n)})
	}
	// Preempted by the hog ten times.
	for n := 0; n < 10; n++ {
		at := 150 + 180*float64(n)
		r.Add(r.Off(w, at, at+8, event.ReasonRunqueue, "", hog, 8))
	}
	for s := 1; s <= 4; s++ {
		r.Add(&event.CPUTime{Header: w.At(500 * float64(s)), OnCPU: MS(1880.0 / 4)})
	}
	r.Add(&event.Exit{Header: w.At(1994)}, &event.CPUTime{Header: main.At(1998), OnCPU: MS(4)},
		&event.Exit{Header: main.At(1998), GroupDead: true})
	return r.Close()
}

// cpuBoundMeta is the metadata `whyslow run` writes for CPUBound.
func cpuBoundMeta() map[string]string {
	return map[string]string{"level": "full", "scope": "command", "command": "compress\x00/data/in.txt\x00/data/out.gz",
		"target_pid": "3000", "target_start_mono": strconv.FormatUint(At(0), 10), "target_end_mono": strconv.FormatUint(At(2000), 10),
		"duration_ns": strconv.FormatUint(MS(2100), 10), "exit_code": "0", "dirty_at_exit": "0",
		"target_user_ns": strconv.FormatUint(MS(1800), 10), "target_system_ns": strconv.FormatUint(MS(90), 10),
		"recording": "/var/tmp/cpu.db"}
}

// SlowRequest is a one-threaded web server (python3, pid 4000, attached with
// --requests) answering six requests; one, POST /vote/linux, saves a session
// and waits 680 ms in fsync while someone's `sync` (pid 4100) and a backup
// (tar, pid 4200) keep the disk busy. Two events were lost.
func SlowRequest(r *Recording) string {
	srv := Thread{4000, 4000, "python3"}
	syncer := Thread{4100, 4100, "sync"}
	tar := Thread{4200, 4200, "tar"}
	flusher := Thread{61, 61, "kworker/u8:3"}
	listen := event.FileRef{Dev: sockfs, Ino: 400, Gen: 0, Kind: event.KindSocketInet}
	words, sess, backup := file(slowDisk, 300), file(slowDisk, 301), file(slowDisk, 302)
	r.Device(Device{Dev: slowDisk, Name: "vdb"})
	r.Interface("lo", "127.0.0.1")
	r.Interface("eth0", "10.0.0.2")
	r.Lost("offcpu", 2)

	r.Add(&event.Existing{Header: srv.At(0), PPID: 1, State: 'S', Args: []string{"python3", "app.py"}},
		&event.File{Header: event.Header{Time: At(0)}, Ref: listen, Path: "socket:[400]", Local: netip.MustParseAddrPort("0.0.0.0:8080")},
		describe(0, words, "/srv/words.txt", 1<<20), describe(0, sess, "/srv/sessions/sess_42", 512), describe(0, backup, "/var/backups/home.tar", 0))
	paths := []string{"/popular/linux", "/popular/go", "/popularity/linux?from=2024", "/vote/linux", "/popular/rust", "/popular/c"}
	starts := []float64{200, 600, 1000, 1400, 2200, 2600}
	prev := 0.0
	for k, p := range paths {
		t0 := starts[k]
		conn := event.FileRef{Dev: sockfs, Ino: 500 + uint64(k), Gen: 0, Kind: event.KindSocketInet}
		method := "GET"
		if k == 3 {
			method = "POST"
		}
		req := method + " " + p + " HTTP/1.1\r\nHost: words\r\n\r\n"
		r.Add(srv.Blocked("accept4", prev, t0-prev-0.1, 3, int64(5+k), listen),
			r.Off(srv, prev+0.01, t0-0.1, event.ReasonNetwork, "accept4", Thread{}, 0.02, acceptStack...),
			&event.File{Header: event.Header{Time: At(t0 - 0.1)}, Ref: conn, Path: fmt.Sprintf("socket:[%d]", conn.Ino),
				Local: netip.MustParseAddrPort("10.0.0.2:8080"), Peer: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.7"), uint16(41000+k))},
			srv.Call("recvfrom", t0, 0.05, 5, int64(len(req)), conn),
			&event.Payload{Header: srv.At(t0), Conn: conn, Data: []byte(req)},
			Totals(srv, "read", t0+0.1, t0+0.9, words, 4, 64<<10, 20_000))
		done := t0 + 1.2
		if k == 3 {
			r.Add(Totals(srv, "write", t0+1, t0+1, sess, 1, 512, 15_000),
				srv.Blocked("fsync", t0+1, 680, 6, 0, sess),
				r.Off(srv, t0+1.2, t0+680.5, event.ReasonSync, "fsync", flusher, 0.2, fsyncStack...),
				Block(srv, t0+679, 600, 70, slowDisk, 1, 4096, 9000, sess))
			done = t0 + 682
		}
		r.Add(srv.Call("sendto", done, 0.05, 5, 2048, conn), srv.Call("close", done+0.1, 0.01, 5, 0, conn),
			&event.CPUTime{Header: srv.At(done + 0.2), OnCPU: MS(1.1)})
		prev = done + 0.2
	}
	r.Add(srv.Blocked("accept4", prev, 3000-prev, 3, -4, listen),
		r.Off(srv, prev+0.01, 3000, event.ReasonNetwork, "accept4", Thread{}, 0, acceptStack...))
	// The slow request's company: a sync, and a backup's writeback.
	slow := starts[3]
	r.Add(&event.Exec{Header: syncer.At(slow - 100), PPID: 900, Filename: "/usr/bin/sync", Args: []string{"sync"}},
		syncer.Blocked("sync", slow-99, 900, -1, 0, event.FileRef{}),
		&event.Exit{Header: syncer.At(slow + 802), GroupDead: true},
		&event.Dirtied{Header: tar.At(200), Last: At(1500), File: backup, Pages: 25600})
	for n := 0; n < 20; n++ {
		r.Add(Block(flusher, slow+20+30*float64(n), 5, 20, slowDisk, 1, 4*mib, 100000+uint64(n)*8192, backup))
	}
	r.Add(&event.Writeback{Header: flusher.At(slow + 650), File: backup, Pages: 20480, Dur: MS(640)})
	return r.Close()
}

// slowRequestMeta is the metadata `whyslow attach -p 4000 --requests` writes.
func slowRequestMeta() map[string]string {
	return map[string]string{"level": "syscalls", "scope": "pid", "command": "python3\x00app.py", "target_pid": "4000",
		"target_start_mono": strconv.FormatUint(At(0), 10), "target_end_mono": strconv.FormatUint(At(3000), 10),
		"duration_ns": strconv.FormatUint(MS(3000), 10), "requests": "true", "payload_bytes": "128",
		"recording": "/var/tmp/board.db"}
}

// TempFiles is the Flask story at the default level (no syscall hooked): a
// request handler (python3, pid 5000) creates, writes, reads and deletes 300
// temporary files under /tmp/<uuid>/, spending its CPU time in the kernel,
// then appends to a journal and fsyncs it. The evidence is the default
// level's: CPU samples at the timer interrupt (the syscall and path),
// pages dirtied, files described when first dirtied and marked deleted at
// the end, and the waits seen at context switches with their syscall rows.
func TempFiles(r *Recording) string {
	py := Thread{5000, 5000, "python3"}
	journal := file(nvme, 700)
	r.Device(Device{Dev: nvme, Name: "nvme0n1"})
	r.Add(&event.Exec{Header: py.At(0), PPID: 1, Filename: "/usr/bin/python3", Args: []string{"python3", "handler.py"}},
		describe(1, journal, "/var/lib/app/journal.log", 4096))
	dir := "/tmp/1f0e8d2c-4b7a-4e11-9c3d-5a6b7c8d9e0f"
	for n := 0; n < 300; n++ {
		f := event.FileRef{Dev: tmpfs, Ino: 2000 + uint64(n), Gen: 1, Kind: event.KindRegular}
		path := fmt.Sprintf("%s/%d.txt", dir, n)
		at := 10 + 4*float64(n)
		r.Add(describe(at, f, path, 0),
			&event.Dirtied{Header: py.At(at), Last: At(at), File: f, Pages: 1},
			// gone at the end of the recording
			&event.File{Header: event.Header{Time: At(1900)}, Ref: f, Path: path, Deleted: true})
		// two samples in openat (by path), one in write, one in unlink, one in user space
		r.Add(&event.Sample{Header: py.At(at + 0.5), Syscall: int32(Nr("openat")), FD: -100, Path: path, StackID: -1},
			&event.Sample{Header: py.At(at + 1.5), Syscall: int32(Nr("openat")), FD: -100, Path: path, StackID: -1},
			&event.Sample{Header: py.At(at + 2), Syscall: int32(Nr("write")), FD: 3, File: f, StackID: -1},
			&event.Sample{Header: py.At(at + 3), Syscall: int32(Nr("unlink")), FD: -1, Path: path, StackID: -1},
			&event.Sample{Header: py.At(at + 3.5), User: true, Syscall: -1, FD: -1, StackID: -1})
	}
	// The journal's fsync: three waits, each a syscalls row spanning the wait.
	for n := 0; n < 3; n++ {
		from := 1250 + 60*float64(n)
		r.Add(r.Off(py, from, from+55, event.ReasonSync, "fsync", Thread{}, 0.05, fsyncStack...))
		c := py.Blocked("fsync", from, 55, 4, 0, journal)
		r.Add(c, Block(py, from+50, 1, 40, nvme, 1, 64<<10, 8192+uint64(n)*128, journal))
	}
	r.Add(&event.Dirtied{Header: py.At(1240), Last: At(1245), File: journal, Pages: 48})
	// On a CPU whenever it did not wait: 1500 ms less the fsyncs' 165.
	for s := 1; s <= 4; s++ {
		r.Add(&event.CPUTime{Header: py.At(300 * float64(s)), OnCPU: MS(1335.0 / 4)})
	}
	r.Add(&event.Exit{Header: py.At(1500), GroupDead: true})
	return r.Close()
}

// tempFilesMeta is the metadata `whyslow run` writes for TempFiles: the
// default level, "waits".
func tempFilesMeta() map[string]string {
	return map[string]string{"level": "waits", "scope": "command", "command": "python3\x00handler.py",
		"target_pid": "5000", "target_start_mono": strconv.FormatUint(At(0), 10), "target_end_mono": strconv.FormatUint(At(1500), 10),
		"duration_ns": strconv.FormatUint(MS(1950), 10), "exit_code": "0", "dirty_at_exit": "0",
		"target_user_ns": strconv.FormatUint(MS(200), 10), "target_system_ns": strconv.FormatUint(MS(1135), 10),
		"recording": "/dev/shm/whyslow-temp.db"}
}
