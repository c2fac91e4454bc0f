package store_test

import (
	"fmt"
	"math"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// Strings a traced program controls: a NUL inside, bytes that are not UTF-8,
// one short enough for DuckDB to inline (12 bytes) and one just too long,
// quotes, and an empty one.
var odd = []string{"a\x00b", "\xff\xfe\x80", "twelve bytes", "thirteen byte", `'";\`, ""}

// notUTF8 is how odd[1] reads back from a VARCHAR: as text
// (event.EncodeText), never NULL, which is what DuckDB's C API stores for a
// string that is not UTF-8. A BLOB keeps any bytes.
var notUTF8 any = `\xff\xfe\x80`

// TestEveryTableRoundTrips writes one row of every kind the recorder writes,
// with extreme values, NULLs, odd strings and lists, and reads each table
// back value for value, with the Go type the driver gives for its column.
func TestEveryTableRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const maxU64, maxU32 = math.MaxUint64, math.MaxUint32
	h := event.Header{Time: maxU64 - 1, PID: maxU32, TID: maxU32 - 1, Comm: odd[0]}
	f := event.FileRef{Dev: maxU32, Ino: maxU64, Gen: maxU32 - 2, Kind: event.KindSocketInet}
	f2 := event.FileRef{Dev: 1, Ino: 2, Gen: 3, Kind: event.KindPipe}
	at := func(ts uint64, comm string) event.Header { return event.Header{Time: ts, PID: 7, TID: 8, Comm: comm} }
	w.Write([]event.Event{
		&event.Syscall{Header: h, Dur: maxU64, Ret: math.MinInt64, Req: maxU64 - 3, FD: math.MinInt32, FD2: math.MaxInt32,
			Nr: 65535, Flags: maxU32, Blocked: true, File: f, File2: f2},
		// no second file: a row of syscall_packed alone, which syscall_raw
		// gives as version 3 stored it
		&event.Syscall{Header: at(5, "off"), Dur: 1, Ret: 2, FD: 3, FD2: -1, Nr: 0, File: f2},
		&event.SyscallTotals{Header: at(10, odd[1]), Last: 11, Nr: 0, File: f2, Count: maxU64, Bytes: 5, TotalNS: 6,
			MaxNS: 7, Errors: 8, Slots: []uint64{0, maxU64, 3}},
		// accept: no bytes, no slots; no name, so its thread's last one
		&event.SyscallTotals{Header: at(12, ""), Last: 13, Nr: 43, File: f, Count: 1},
		&event.File{Header: at(20, "x"), Ref: f, Path: odd[3], Deleted: true, Size: maxU64,
			Local: netip.MustParseAddrPort("10.0.0.1:80"), Peer: netip.MustParseAddrPort("[::1]:8080")},
		&event.File{Header: at(21, "x"), Ref: f2, Path: odd[1], Truncated: true,
			Peer: netip.MustParseAddrPort("10.0.0.2:0")}, // a peer with no port is no peer: NULL
		// unix: the server's path is the peer's address for the end that connected
		&event.File{Header: at(22, "x"), Ref: event.FileRef{Dev: 9, Ino: 10, Kind: event.KindSocketUnix}, Path: "socket:[10]",
			UnixPath: odd[2], PeerIno: maxU64},
		&event.OffCPU{Header: at(30, "off"), Off: 25, Runq: maxU64, State: 'D', StackID: 9, Syscall: 40000,
			WakerPID: 1, WakerTID: 2, WakerComm: odd[4], Reason: event.ReasonDiskWrite, Stack: odd, Outside: true,
			WakerSide: event.SideServer, WakerFile: event.FileRef{Dev: maxU32, Ino: maxU64, Gen: maxU32 - 2, Kind: event.KindSocketUnix},
			FileKind: event.KindSocketInet, WakerSyscall: 62},
		&event.OffCPU{Header: at(31, "off"), Off: 6, State: 'S', StackID: 9, Syscall: -1, Reason: event.Reason("nonsense"),
			Stack: []string{"another stack, same id: not written again"}, Waits: 3, MaxOff: 4, RunStart: 20, Quota: true}, // a run, held off by a CPU quota
		&event.CPUQuota{Header: at(35, "q"), Phase: event.QuotaFirst, Cgroup: odd[2], Version: "v1", QuotaUS: -1,
			PeriodUS: math.MaxInt64, Periods: maxU64, Throttled: 2, ThrottledNS: 3},
		&event.MemoryLimit{Header: at(36, "m"), Phase: event.QuotaEnd, Cgroup: "/docker/4f1e", Version: "v2", LimitBytes: maxU64, HighBytes: 0, RefaultBytes: 4096},
		&event.IOLimit{Header: at(37, "io"), Cgroup: "/batch", Version: "v1", Dev: maxU32, ReadBPS: maxU64, WriteBPS: 1, ReadIOPS: 0, WriteIOPS: 3},
		&event.Block{Header: at(40, "blk"), InsertTime: 38, IssueTime: 39, Sector: maxU64, Bytes: maxU32, Dev: 5,
			Op: 9, Sync: true, FUA: true, Error: -5, File: f},
		&event.Throttle{Header: at(50, "thr"), Pause: 1, Period: 2, Dirtied: 3, BDIDev: maxU32},
		&event.Writeback{Header: event.Header{Time: 60, PID: 1, TID: 2, Comm: odd[2]}, File: f2, Pages: 4, Dur: 5},
		&event.Dirtied{Header: at(70, "dirt"), Last: 71, File: f, Pages: maxU64},
		&event.CPUTime{Header: at(80, "cpu"), OnCPU: maxU64},
		&event.Fork{Header: at(90, "fork"), ChildPID: maxU32, ChildTID: 1},
		&event.Exec{Header: at(100, "exec"), PPID: 3, Filename: odd[0], Args: odd, Cgroup: "/sys.slice", Service: "cart"},
		&event.Exec{Header: at(101, "exec"), Filename: "/bin/true"}, // no args: an empty list
		&event.Exit{Header: at(110, "exit"), Code: math.MinInt32, GroupDead: true},
		&event.Payload{Header: at(120, "srv"), Conn: f, Data: []byte("GET /\x00\xff"), Arrived: maxU64},
		&event.Payload{Header: at(121, "srv"), Conn: f},
		&event.Sample{Header: at(130, "smp"), User: true, Syscall: -1, FD: -1, File: f2, Path: odd[1], StackID: 11,
			Stack: []string{"asm_sysvec_apic_timer_interrupt"}},
		&event.Sample{Header: at(131, "smp"), Syscall: 0, FD: 3, StackID: 12}, // a stack not symbolised: no row
		&event.Existing{Header: at(140, "old"), PPID: 1, State: 'D', Args: []string{"sleep", "1"}, Cgroup: "/system.slice/cron.service", Service: odd[0]},
		&event.Unlink{Header: at(150, "rm"), Dur: 9, Ret: -2, Nr: 87, Dir: f2, Name: odd[1]},
		&event.Uring{Header: at(160, "ring"), Dur: 1, Res: math.MaxInt64, UserData: maxU64, Opcode: 22, FD: -1, File: f},
	})
	if err := w.Close(map[string]uint64{"events": maxU64, "meta": 0}); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	list := func(v ...any) []any { return append([]any{}, v...) }
	strs := func(s []string) []any {
		out := []any{}
		for _, x := range s {
			if x == odd[1] {
				out = append(out, notUTF8)
			} else {
				out = append(out, x)
			}
		}
		return out
	}
	// comm_id columns are read as the names the comms table gives them.
	for _, c := range []struct {
		query string
		want  [][]any
	}{
		{"SELECT * REPLACE ((SELECT comm FROM comms WHERE comm_id = r.comm_id) AS comm_id) FROM syscall_raw r ORDER BY ts", [][]any{
			{uint64(5), uint64(1), uint32(7), uint32(8), "off", uint16(0), int32(3), int64(2), uint64(0), false,
				uint32(1), uint64(2), uint32(3), uint8(event.KindPipe), int32(-1), uint32(0), uint64(0), uint32(0), uint32(0)},
			{uint64(maxU64 - 1), uint64(maxU64), uint32(maxU32), uint32(maxU32 - 1), odd[0], uint16(65535), int32(math.MinInt32),
				int64(math.MinInt64), uint64(maxU64 - 3), true, uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2), uint8(event.KindSocketInet),
				int32(math.MaxInt32), uint32(1), uint64(2), uint32(3), uint32(maxU32)},
		}},
		{"SELECT * FROM syscall_totals ORDER BY ts", [][]any{
			{uint64(10), uint64(11), uint32(7), uint32(8), notUTF8, "read", "read", uint32(1), uint64(2), uint32(3), "pipe",
				uint64(maxU64), uint64(5), uint64(6), uint64(7), uint64(8), list(uint64(0), uint64(maxU64), uint64(3))},
			{uint64(12), uint64(13), uint32(7), uint32(8), notUTF8, "accept", "net", uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2),
				"socket", uint64(1), uint64(0), uint64(0), uint64(0), uint64(0), list()},
		}},
		{"SELECT * FROM files ORDER BY ts", [][]any{
			{uint64(20), uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2), "socket", odd[3], true, false, uint64(maxU64),
				"10.0.0.1:80", "[::1]:8080", uint64(0)},
			{uint64(21), uint32(1), uint64(2), uint32(3), "pipe", notUTF8, false, true, uint64(0), nil, nil, uint64(0)},
			{uint64(22), uint32(9), uint64(10), uint32(0), "unix", "socket:[10]", false, false, uint64(0), nil, odd[2], uint64(maxU64)},
		}},
		{"SELECT * REPLACE ((SELECT comm FROM comms WHERE comm_id = r.comm_id) AS comm_id, " +
			"(SELECT comm FROM comms WHERE comm_id = r.waker_comm_id) AS waker_comm_id) FROM offcpu_raw r ORDER BY ts", [][]any{
			{uint64(30), uint64(5), uint64(25), uint64(maxU64), uint32(7), uint32(8), "off", uint8('D'), int32(9),
				int16(-1), uint32(1), uint32(2), odd[4], true, uint8(event.SideServer), uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2),
				uint8(event.KindSocketInet), uint8(event.KindSocketUnix), int16(62), uint32(1), uint64(5), uint64(25), false},
			{uint64(31), uint64(25), uint64(6), uint64(0), uint32(7), uint32(8), "off", uint8('S'), int32(9),
				int16(-1), uint32(0), uint32(0), "", false, uint8(0), uint32(0), uint64(0), uint32(0), uint8(0), uint8(0), int16(0),
				uint32(3), uint64(20), uint64(4), true},
		}},
		{"SELECT * FROM cpu_quotas", [][]any{
			{uint64(35), uint32(7), uint32(8), "first", odd[2], "v1", int64(-1), int64(math.MaxInt64), uint64(maxU64), uint64(2), uint64(3)},
		}},
		{"SELECT * FROM io_limits", [][]any{
			{uint64(37), uint32(7), uint32(8), "/batch", "v1", uint32(maxU32), uint64(maxU64), uint64(1), uint64(0), uint64(3)},
		}},
		{"SELECT * FROM memory_limits", [][]any{
			{uint64(36), uint32(7), uint32(8), "end", "/docker/4f1e", "v2", uint64(maxU64), uint64(0), uint64(4096)},
		}},
		{"SELECT * FROM stacks ORDER BY stack_id", [][]any{
			{int32(9), strs(odd)},
			{int32(11), list("asm_sysvec_apic_timer_interrupt")},
		}},
		{"SELECT * REPLACE ((SELECT comm FROM comms WHERE comm_id = r.comm_id) AS comm_id) FROM block_raw r", [][]any{
			{uint64(40), uint64(38), uint64(39), uint32(7), uint32(8), "blk", uint32(5), uint64(maxU64), uint32(maxU32), uint8(9),
				true, false, true, int32(-5), uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2)},
		}},
		{"SELECT * FROM throttle", [][]any{{uint64(50), uint32(7), uint32(8), "thr", uint64(1), uint64(2), uint64(3), uint32(maxU32)}}},
		{"SELECT * FROM writeback", [][]any{{uint64(60), uint32(1), uint32(2), odd[2], uint32(1), uint64(2), uint32(3), uint64(4), uint64(5)}}},
		{"SELECT * FROM dirtied", [][]any{{uint64(70), uint64(71), uint32(7), uint32(8), "dirt", uint32(maxU32), uint64(maxU64),
			uint32(maxU32 - 2), uint64(maxU64)}}},
		{"SELECT * FROM cputime", [][]any{{uint64(80), uint32(7), uint32(8), "cpu", uint64(maxU64)}}},
		{"SELECT * FROM forks", [][]any{{uint64(90), uint32(7), uint32(8), "fork", uint32(maxU32), uint32(1)}}},
		{"SELECT * FROM execs ORDER BY ts", [][]any{
			{uint64(100), uint32(7), uint32(8), "exec", uint32(3), odd[0], strs(odd), "/sys.slice", "cart"},
			{uint64(101), uint32(7), uint32(8), "exec", uint32(0), "/bin/true", list(), "", ""},
		}},
		{"SELECT * FROM exits", [][]any{{uint64(110), uint32(7), uint32(8), "exit", int32(math.MinInt32), true}}},
		{"SELECT * FROM payloads ORDER BY ts", [][]any{
			{uint64(120), uint32(7), uint32(8), uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2), []byte("GET /\x00\xff"), uint64(maxU64)},
			{uint64(121), uint32(7), uint32(8), uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2), []byte{}, uint64(0)},
		}},
		{"SELECT * REPLACE ((SELECT comm FROM comms WHERE comm_id = r.comm_id) AS comm_id) FROM samples r ORDER BY ts", [][]any{
			{uint64(130), uint32(7), uint32(8), "smp", true, int16(-1), int32(-1), uint32(1), uint64(2), uint32(3),
				uint8(event.KindPipe), notUTF8, int32(11)},
			{uint64(131), uint32(7), uint32(8), "smp", false, int16(0), int32(3), uint32(0), uint64(0), uint32(0), uint8(0), "", int32(12)},
		}},
		{"SELECT * FROM existing", [][]any{{uint64(140), uint32(7), uint32(8), "old", uint32(1), "D", list("sleep", "1"), "/system.slice/cron.service", odd[0]}}},
		{"SELECT * FROM unlink_raw", [][]any{{uint64(150), uint64(9), uint32(7), uint32(8), "rm", "unlink", int64(-2),
			uint32(1), uint64(2), uint32(3), notUTF8}}},
		{"SELECT * FROM uring", [][]any{{uint64(160), uint64(1), uint32(7), uint32(8), "ring", uint32(22), int64(math.MaxInt64),
			uint64(maxU64), int32(-1), uint32(maxU32), uint64(maxU64), uint32(maxU32 - 2), "socket"}}},
		{"SELECT * FROM lost ORDER BY source", [][]any{{"events", uint64(maxU64)}, {"meta", uint64(0)}}},
	} {
		got := queryRows(t, rec, c.query)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.query, show(got), show(c.want))
		}
	}
	var n int
	if err := rec.DB.QueryRow("SELECT count(*) FROM comms").Scan(&n); err != nil || n != 6 {
		t.Errorf("comms: %d names (%v), want 6, each once", n, err)
	}
}

// TestManyChunksRoundTrip: rows cross many of DuckDB's data chunks (2048
// rows) and flushes; each chunk's NULLs, strings and lists must be its own,
// not left over from the chunk before.
func TestManyChunksRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 3*2048*8 + 5 // past several early flushes, and a partial chunk
	var batch []event.Event
	for i := range rows {
		e := &event.Exec{Header: event.Header{Time: uint64(i), PID: 1, TID: uint32(i), Comm: "c"}, Filename: strings.Repeat("f", i%40)}
		for j := range i % 4 {
			e.Args = append(e.Args, fmt.Sprint(i, j))
		}
		f := &event.File{Header: event.Header{Time: uint64(i)}, Ref: event.FileRef{Ino: uint64(i)}, Path: fmt.Sprint("/p/", i)}
		if i%3 == 0 {
			f.Peer = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), uint16(i+1))
		}
		batch = append(batch, e, f)
		if len(batch) >= 4096 {
			w.Write(batch)
			batch = nil
		}
	}
	w.Write(batch)
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	execs := queryRows(t, rec, "SELECT ts, filename, args FROM execs ORDER BY ts")
	files := queryRows(t, rec, "SELECT ts, path, peer FROM files ORDER BY ts")
	if len(execs) != rows || len(files) != rows {
		t.Fatalf("%d execs and %d files, want %d each", len(execs), len(files), rows)
	}
	bad := 0
	for i := range rows {
		args := []any{}
		for j := range i % 4 {
			args = append(args, fmt.Sprint(i, j))
		}
		var peer any
		if i%3 == 0 {
			peer = fmt.Sprintf("10.0.0.%d:%d", byte(i), uint16(i+1))
		}
		we := []any{uint64(i), strings.Repeat("f", i%40), args}
		wf := []any{uint64(i), fmt.Sprint("/p/", i), peer}
		if !reflect.DeepEqual(execs[i], we) || !reflect.DeepEqual(files[i], wf) {
			if bad++; bad <= 5 {
				t.Errorf("row %d: got %s %s, want %s %s", i, show(execs[i:i+1]), show(files[i:i+1]), show([][]any{we}), show([][]any{wf}))
			}
		}
	}
}

func queryRows(t *testing.T, rec *store.Recording, q string) [][]any {
	t.Helper()
	rows, err := rec.DB.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		v := make([]any, len(cols))
		p := make([]any, len(cols))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

// show prints rows with each value's Go type, so that a uint32 read where a
// uint64 was written shows.
func show(rows [][]any) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("[")
		for i, v := range r {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%T(%q)", v, fmt.Sprint(v))
		}
		b.WriteString("]")
	}
	return b.String()
}

// TestCommNamesFollowTheirThread: a row without a command name takes its
// thread's last one, whichever event named it last, even when the names of
// threads are cached (a thread renamed, renamed back, and another thread in
// the same cache slot).
func TestCommNamesFollowTheirThread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.db")
	w, err := store.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ts uint64, tid uint32, comm string) event.Header {
		return event.Header{Time: ts, PID: 1, TID: tid, Comm: comm}
	}
	w.Write([]event.Event{
		&event.Syscall{Header: at(1, 1, "a")},
		&event.Throttle{Header: at(2, 1, "b")},
		&event.Syscall{Header: at(3, 1, "a")},
		&event.Dirtied{Header: at(4, 1, "")}, // a
		&event.Syscall{Header: at(5, 257, "c")},
		&event.Throttle{Header: at(6, 1, "d")},
		&event.Dirtied{Header: at(7, 1, "")}, // d
		&event.OffCPU{Header: at(8, 1, "a"), StackID: -1, WakerTID: 1, WakerComm: "w"},
		&event.Dirtied{Header: at(9, 1, "")},     // a: a waker's name is not its thread's
		&event.Syscall{Header: at(10, 257, "")},  // c
		&event.Block{Header: at(11, 257, "blk")}, // named, not its thread's
		&event.Dirtied{Header: at(12, 257, "")},  // c
	})
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	got := queryRows(t, rec, `SELECT ts, comm FROM syscalls UNION ALL SELECT ts, comm FROM dirtied
		UNION ALL SELECT ts, comm FROM offcpu UNION ALL SELECT ts, waker_comm FROM offcpu UNION ALL SELECT ts, comm FROM block ORDER BY ALL`)
	want := [][]any{{uint64(1), "a"}, {uint64(3), "a"}, {uint64(4), "a"}, {uint64(5), "c"}, {uint64(7), "d"},
		{uint64(8), "a"}, {uint64(8), "w"}, {uint64(9), "a"}, {uint64(10), "c"}, {uint64(11), "blk"}, {uint64(12), "c"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %s\nwant %s", show(got), show(want))
	}
	// The process is named after its main thread, not its worker "c" seen
	// last (issue 27).
	if p := queryRows(t, rec, "SELECT comm FROM processes WHERE pid = 1"); len(p) != 1 || p[0][0] != "a" {
		t.Errorf("process 1 named %v, want its main thread's name a", p)
	}
}
