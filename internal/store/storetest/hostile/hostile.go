// Package hostile builds small recordings with the store's own writer, so
// the tests of what reads recordings (exports, reports) need no BPF and no
// root. The recording tells one story with known numbers: a server process
// whose main thread waits on a worker that writes a file (disk writes, then
// dirty throttling), serves two HTTP requests, and sleeps; its names and
// paths are hostile on purpose (HTML, terminal escapes, separators).
package hostile

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// Hostile strings a traced program controls: each output must escape them.
const (
	WorkerComm = "<img src=x>;\x1b[31m\u202e"
	FilePath   = "/data/out;<script>alert(1)</script>.bin"
	Label      = "GET /<b>x</b>"
)

// Times, in nanoseconds of CLOCK_MONOTONIC.
const (
	Start    = uint64(1_000_000_000_000)
	Duration = uint64(2_000_000_000)
	ms       = uint64(1_000_000)
)

// PID is the target process; WorkerTID its second thread.
const (
	PID       = uint32(100)
	WorkerTID = uint32(101)
	// DiskWriteNS, ThrottleNS, SleepNS: the off-CPU time of each reason
	// (the worker's write, its throttling, the main thread's sleep).
	DiskWriteNS = 380 * ms
	ThrottleNS  = 90 * ms
	SleepNS     = 1200 * ms
	// OnCPU of the main thread and of the worker.
	MainOnCPUNS   = 100 * ms
	WorkerOnCPUNS = 30 * ms
)

// Device is the block device of the fixture's requests (loop 250: absent on
// any real machine, so the devices table never names it).
const Device = uint32(7<<20 | 250)

// DiskStack and ThrottleStack are the kernel stacks (innermost first).
var (
	DiskStack     = []string{"io_schedule", "folio_wait_bit_common", "ext4_write_begin", "vfs_write", "ksys_write"}
	ThrottleStack = []string{"schedule_timeout", "balance_dirty_pages", "vfs_write", "ksys_write"}
	SleepStack    = []string{"hrtimer_nanosleep", "do_nanosleep"}
)

// Build writes the fixture recording into dir and returns its path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "fixture.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	end := Start + Duration
	if err := w.SetMeta(map[string]string{
		"host": "fixture", "kernel": "6.1.0", "arch": "x86_64", "whyslow_version": "test",
		"start_wall": "2026-11-22T12:00:00Z", "end_wall": "2026-11-22T12:00:02Z",
		"clock_offset_ns": fmt.Sprint(int64(1_795_867_200_000_000_000) - int64(Start)),
		"start_mono":      fmt.Sprint(Start), "duration_ns": fmt.Sprint(Duration),
		"level": "default", "slow_ns": "1000000", "scope": "command", "command": "server\x00--port\x008080",
		"target_pid": fmt.Sprint(PID), "target_start_mono": fmt.Sprint(Start), "target_end_mono": fmt.Sprint(end),
		"exit_code": "0", "flavour": "tp_btf", "requests": "true", "payload_bytes": "128",
	}); err != nil {
		t.Fatal(err)
	}
	w.Write(events())
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(map[string]uint64{"events": 0}); err != nil {
		t.Fatal(err)
	}
	return path
}

func hdr(ts uint64, tid uint32, comm string) event.Header {
	return event.Header{Time: ts, PID: PID, TID: tid, Comm: comm}
}

func events() []event.Event {
	main, worker := PID, WorkerTID
	file := event.FileRef{Dev: 8<<20 | 1, Ino: 12, Gen: 1, Kind: event.KindRegular}
	sock := event.FileRef{Dev: 0, Ino: 900, Gen: 0, Kind: event.KindSocketInet}
	at := func(d uint64) uint64 { return Start + d*ms }
	evs := []event.Event{
		&event.Exec{Header: hdr(at(0), main, "server"), PPID: 1, Filename: "/usr/bin/server", Args: []string{"server", "--port", "8080"}},
		&event.Fork{Header: hdr(at(1), main, "server"), ChildPID: PID, ChildTID: worker},
		&event.File{Header: hdr(at(2), worker, WorkerComm), Ref: file, Path: FilePath},
		&event.File{Header: hdr(at(2), main, "server"), Ref: sock, Path: "socket:[900]",
			Local: netip.MustParseAddrPort("127.0.0.1:8080"), Peer: netip.MustParseAddrPort("127.0.0.1:40000")},
		// The worker writes 1 MiB: waits for the disk, then is throttled.
		&event.Syscall{Header: hdr(at(20), worker, WorkerComm), Dur: 480 * ms, Ret: 1 << 20, Req: 1 << 20, FD: 3, FD2: -1,
			Nr: 1, Blocked: true, File: file},
		&event.OffCPU{Header: hdr(at(20)+DiskWriteNS, worker, WorkerComm), Off: DiskWriteNS, Runq: ms / 2, State: 'D',
			StackID: 1, Syscall: 1, Reason: event.ReasonDiskWrite, Stack: DiskStack},
		&event.OffCPU{Header: hdr(at(410)+ThrottleNS, worker, WorkerComm), Off: ThrottleNS, Runq: 0, State: 'D',
			StackID: 2, Syscall: 1, Reason: event.ReasonDirtyThrottle, Stack: ThrottleStack},
		&event.Dirtied{Header: hdr(at(20), worker, WorkerComm), Last: at(400), File: file, Pages: 256},
		&event.Throttle{Header: hdr(at(500), worker, WorkerComm), Pause: ThrottleNS, Period: ThrottleNS, Dirtied: 256, BDIDev: Device},
		&event.Writeback{Header: event.Header{Time: at(450), PID: 40, TID: 40, Comm: "kworker/u4:1"}, File: file, Pages: 128, Dur: 40 * ms},
		&event.CPUTime{Header: hdr(at(505), worker, WorkerComm), OnCPU: WorkerOnCPUNS},
		&event.Exit{Header: hdr(at(505), worker, WorkerComm), Code: 0},
		// The main thread waits for the worker (a join: woken by it).
		&event.OffCPU{Header: hdr(at(510), main, "server"), Off: 500 * ms, Runq: ms, State: 'S',
			StackID: 3, Syscall: 202, WakerPID: PID, WakerTID: worker, WakerComm: WorkerComm,
			Reason: event.ReasonLock, Stack: []string{"futex_wait_queue", "futex_wait", "do_futex"}},
		// Preempted, then sleeps.
		&event.OffCPU{Header: hdr(at(620), main, "server"), Off: 20 * ms, Runq: 20 * ms, State: 'R',
			StackID: -1, Syscall: -1, Reason: event.ReasonRunqueue},
		&event.OffCPU{Header: hdr(at(700)+SleepNS, main, "server"), Off: SleepNS, Runq: 0, State: 'S',
			StackID: 4, Syscall: 35, Reason: event.ReasonSleep, Stack: SleepStack},
		&event.CPUTime{Header: hdr(at(1990), main, "server"), OnCPU: MainOnCPUNS},
	}
	// Two requests on one keep-alive connection: accept, then read and
	// answer twice, the second answer 60 ms late.
	evs = append(evs, &event.Syscall{Header: hdr(at(622), main, "server"), Dur: ms, Ret: 5, FD: 4, FD2: -1, Nr: 288, File: sock})
	for i, r := range []struct{ read, write, dur uint64 }{{630, 640, 1}, {650, 690, 1}} {
		evs = append(evs,
			&event.Syscall{Header: hdr(at(r.read), main, "server"), Dur: ms / 10, Ret: 64, Req: 4096, FD: 5, FD2: -1, Nr: 0, File: sock},
			&event.Payload{Header: hdr(at(r.read), main, "server"), Conn: sock, Data: []byte(Label + fmt.Sprint(i) + " HTTP/1.1\r\nHost: x\r\n\r\n")},
			&event.Syscall{Header: hdr(at(r.write), main, "server"), Dur: r.dur * ms, Ret: 200, Req: 200, FD: 5, FD2: -1, Nr: 1, File: sock})
	}
	evs = append(evs, &event.Syscall{Header: hdr(at(695), main, "server"), Dur: ms / 10, Ret: 0, FD: 5, FD2: -1, Nr: 3, File: sock})
	// The disk: 1 MiB written in four requests, one read.
	for i := range uint64(4) {
		evs = append(evs, &event.Block{Header: event.Header{Time: at(100 + 100*i), PID: PID, TID: worker, Comm: WorkerComm},
			InsertTime: at(90 + 100*i), IssueTime: at(95 + 100*i), Sector: 2048 * i, Bytes: 256 << 10, Dev: Device,
			Op: event.BlockOp(1), File: file})
	}
	evs = append(evs, &event.Block{Header: event.Header{Time: at(1500), PID: PID, TID: main, Comm: "server"},
		InsertTime: at(1499), IssueTime: at(1499), Bytes: 4096, Dev: Device, Op: event.BlockOp(0), File: file})
	evs = append(evs, &event.Exit{Header: hdr(at(1995), main, "server"), Code: 0, GroupDead: true})
	return evs
}
