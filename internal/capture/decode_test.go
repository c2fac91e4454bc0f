package capture

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"net/netip"
	"strings"
	"testing"
	"unsafe"

	"github.com/whyslow/whyslow/internal/event"
)

func wire(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func comm(s string) (c [16]int8) {
	for i := 0; i < len(s) && i < 15; i++ {
		c[i] = int8(s[i])
	}
	return c
}

func TestDecodeSyscall(t *testing.T) {
	w := whyslowSyscallEvent{Dur: 1500, Ret: 4096, Req: 4096, Fd: 7, Fd2: -1, Nr: 1, Blocked: 1}
	w.H = whyslowHdr{Ts: 42, Pid: 100, Tid: 101, Kind: evSyscall, Comm: comm("worker")}
	w.F = whyslowFileRef{Dev: 8<<20 | 1, Ino: 1234, Gen: 9, Kind: 1}
	ev, err := newDecoder().decode(wire(t, w))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := ev.(*event.Syscall)
	if !ok || s.PID != 100 || s.TID != 101 || s.Comm != "worker" || s.Ret != 4096 || !s.Blocked ||
		s.File != (event.FileRef{Dev: 8<<20 | 1, Ino: 1234, Gen: 9, Kind: event.KindRegular}) {
		t.Fatalf("decoded %+v", ev)
	}
}

func TestDecodeFilePathAndPeer(t *testing.T) {
	var w whyslowFileEvent
	w.H = whyslowHdr{Kind: evFile}
	w.F = whyslowFileRef{Ino: 5, Kind: 6}
	packNames(&w, "17.txt", "job-3f2a", "tmp") // leaf first, as the kernel walks
	w.Family = 2
	w.Lport, w.Rport = 40000, 8080
	copy(w.Laddr[:], []byte{127, 0, 0, 1})
	copy(w.Raddr[:], []byte{10, 1, 2, 3})
	ev, err := newDecoder().decode(wire(t, w))
	if err != nil {
		t.Fatal(err)
	}
	f := ev.(*event.File)
	if f.Path != "/tmp/job-3f2a/17.txt" {
		t.Errorf("path %q", f.Path)
	}
	if f.Peer != netip.MustParseAddrPort("10.1.2.3:8080") || f.Local != netip.MustParseAddrPort("127.0.0.1:40000") {
		t.Errorf("addresses %v -> %v", f.Local, f.Peer)
	}
	w.Depth = 0
	w.F.Kind = 5
	if f := mustFile(t, wire(t, w)); f.Path != "pipe:[5]" {
		t.Errorf("pipe named %q", f.Path)
	}
}

// TestDecodeFileSentShort: the kernel sends a description with only the
// components it walked; one that claims more than it holds is refused.
func TestDecodeFileSentShort(t *testing.T) {
	var w whyslowFileEvent
	w.H = whyslowHdr{Kind: evFile}
	w.F = whyslowFileRef{Ino: 5, Kind: 1}
	sentBytes := packNames(&w, "app.log", "var")
	head := int(unsafe.Offsetof(w.Names))
	full := wire(t, w)
	sent := full[:head+sentBytes]
	if f := mustFile(t, sent); f.Path != "/var/app.log" {
		t.Errorf("short description named %q", f.Path)
	}
	if _, err := newDecoder().decode(full[:head+len("app.log")+1]); err == nil {
		t.Error("a description of 2 components holding 1 was decoded")
	}
	if _, err := newDecoder().decode(full[:head-1]); err == nil {
		t.Error("a description cut inside its header was decoded")
	}
}

func mustFile(t *testing.T, b []byte) *event.File {
	ev, err := newDecoder().decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return ev.(*event.File)
}

func TestDecodeExecArgs(t *testing.T) {
	var w whyslowExecEvent
	w.H = whyslowHdr{Kind: evExec, Comm: comm("sync")}
	args := "sync\x00-f\x00/mnt\x00"
	for i := range args {
		w.Args[i] = int8(args[i])
	}
	w.ArgsLen = uint32(len(args))
	fn := "/usr/bin/sync"
	for i := range fn {
		w.Filename[i] = int8(fn[i])
	}
	e := func() *event.Exec { ev, _ := newDecoder().decode(wire(t, w)); return ev.(*event.Exec) }()
	if e.Filename != fn || len(e.Args) != 3 || e.Args[2] != "/mnt" {
		t.Errorf("exec %q %q", e.Filename, e.Args)
	}
	w.ArgsLen = 100000 // a lying length must not read past the buffer
	if _, err := newDecoder().decode(wire(t, w)); err != nil {
		t.Error(err)
	}
}

// Bad records are errors, never panics.
func TestDecodeRejectsBadRecords(t *testing.T) {
	d := newDecoder()
	if _, err := d.decode(nil); err == nil {
		t.Error("empty record accepted")
	}
	short := make([]byte, 40)
	short[kindOffset] = evSyscall
	if _, err := d.decode(short); err == nil {
		t.Error("short syscall record accepted")
	}
	unknown := make([]byte, 200)
	unknown[kindOffset] = 99
	if _, err := d.decode(unknown); err == nil {
		t.Error("unknown kind accepted")
	}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.Intn(2000))
		r.Read(b)
		if len(b) > int(kindOffset) {
			b[kindOffset] = byte(r.Intn(13))
		}
		d.decode(b) // must not panic
	}
}

// TestDecoderNamesEveryComm: command names come from a small cache of the
// last ones met, by a hash of their bytes; however they collide, each name
// must come back as itself (the empty one too), over and over.
func TestDecoderNamesEveryComm(t *testing.T) {
	d := newDecoder()
	names := []string{""}
	for i := range 3000 {
		names = append(names, "worker-"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)))
	}
	names = append(names, "fifteen-chars-x")
	rng := rand.New(rand.NewSource(1))
	for range 100_000 {
		want := names[rng.Intn(len(names))]
		if got := d.comm(comm(want)); got != want {
			t.Fatalf("comm %q decoded as %q", want, got)
		}
	}
}

// TestDecodeNamesThatAreNotUTF8: every name a record carries comes out as
// text (event.EncodeText): a command name with stray bytes or cut by the
// kernel in the middle of a character, a path, an exec's file and
// arguments, an unlinked name, a sampled path. Raw, DuckDB would store them
// as NULL and JSON would lose their bytes.
func TestDecodeNamesThatAreNotUTF8(t *testing.T) {
	cut := "my数据库服务进程"[:15] // the kernel's 15 bytes: the last is 务's first
	commTexts := map[string]string{"\xff\xfeprog": `\xff\xfeprog`, cut: `my数据库服\xe5`, "数据库服务": "数据库服务"}
	d := newDecoder()
	for raw, want := range commTexts {
		for range 2 { // met, then from the cache
			if got := d.comm(comm(raw)); got != want {
				t.Errorf("comm %q decoded as %q, want %q", raw, got, want)
			}
		}
	}

	var f whyslowFileEvent
	f.H = whyslowHdr{Kind: evFile, Comm: comm("\xff\xfeprog")}
	f.F = whyslowFileRef{Ino: 5, Kind: 1}
	packNames(&f, "bad\xffname.dat", `back\slash`, "tmp") // leaf first
	if got := mustFile(t, wire(t, f)); got.Path != `/tmp/back\\slash/bad\xffname.dat` || got.Comm != `\xff\xfeprog` {
		t.Errorf("file %q of %q", got.Path, got.Comm)
	}
	f.Flags = fileNoMount // the resolver completes it, then encodes it
	if got := mustFile(t, wire(t, f)); got.Path != relativePrefix+"/tmp/back\\slash/bad\xffname.dat" {
		t.Errorf("relative path %q", got.Path)
	}

	var x whyslowExecEvent
	x.H = whyslowHdr{Kind: evExec}
	args := "/tmp/\xff\xfeprog\x00bad\xffname.dat\x00ok\x00"
	for i := range len(args) {
		x.Args[i] = int8(args[i])
	}
	x.ArgsLen = uint32(len(args))
	fn := "/tmp/\xff\xfeprog"
	for i := range len(fn) {
		x.Filename[i] = int8(fn[i])
	}
	ev, err := newDecoder().decode(wire(t, x))
	if err != nil {
		t.Fatal(err)
	}
	e := ev.(*event.Exec)
	if e.Filename != `/tmp/\xff\xfeprog` || len(e.Args) != 3 || e.Args[0] != `/tmp/\xff\xfeprog` ||
		e.Args[1] != `bad\xffname.dat` || e.Args[2] != "ok" {
		t.Errorf("exec %q %q", e.Filename, e.Args)
	}

	var u whyslowUnlinkEvent
	u.H = whyslowHdr{Kind: evUnlink}
	for i, c := range []byte("gone\xfe") {
		u.Name[i] = int8(c)
	}
	if ev, err := newDecoder().decode(wire(t, u)); err != nil || ev.(*event.Unlink).Name != `gone\xfe` {
		t.Errorf("unlink %+v, %v", ev, err)
	}

	var s whyslowSampleEvent
	s.H = whyslowHdr{Kind: evSample}
	for i, c := range []byte("/p\xff") {
		s.Path[i] = int8(c)
	}
	if ev, err := newDecoder().decode(wire(t, s)); err != nil || ev.(*event.Sample).Path != `/p\xff` {
		t.Errorf("sample %+v, %v", ev, err)
	}
}

// packNames writes a description's names as the kernel does (file.bpf.h):
// leaf first, each with its NUL, one after the other. It returns the bytes
// they take.
func packNames(w *whyslowFileEvent, leafFirst ...string) int {
	off := 0
	for _, n := range leafFirst {
		for j := range len(n) {
			w.Names[off+j] = int8(n[j])
		}
		off += len(n) + 1
	}
	w.Depth = uint16(len(leafFirst))
	return off
}

// TestDecodeLongNames: a component is kept whole up to NAME_MAX (255 bytes);
// a Go build cache's 66-byte names were cut at 63, and the files then
// looked deleted at the recording's end.
func TestDecodeLongNames(t *testing.T) {
	var w whyslowFileEvent
	w.H = whyslowHdr{Kind: evFile}
	w.F = whyslowFileRef{Ino: 5, Kind: 1}
	long := strings.Repeat("a", 64) + "-d"
	longest := strings.Repeat("z", 255)
	sent := packNames(&w, long, longest, "go-build")
	f := mustFile(t, wire(t, w)[:int(unsafe.Offsetof(w.Names))+sent])
	if want := "/go-build/" + longest + "/" + long; f.Path != want {
		t.Errorf("path %q, want %q", f.Path, want)
	}
}

// TestDecodeConnReads: a server's read on a connection comes in one record
// with its arrival and first bytes (a conn_read_event, or for a long first
// read a conn_batch_event of the same head and a longer data), decoded into
// its call and a Payload; a length past the record is cut to it, and a read
// that carries neither bytes nor an arrival is its call alone.
func TestDecodeConnReads(t *testing.T) {
	short := whyslowConnReadEvent{Len: 5, Arrived: 77}
	short.Call = whyslowSyscallEvent{Ret: 5, Nr: 45, Fd: 7, F: whyslowFileRef{Dev: 8, Ino: 9, Kind: 6}}
	short.Call.H = whyslowHdr{Ts: 42, Pid: 100, Tid: 101, Kind: evConnRead}
	copy(short.Data[:], "GET /")
	long := whyslowConnBatchEvent{Len: 900}
	long.Call = whyslowSyscallEvent{Ret: 4000, Nr: 0, F: whyslowFileRef{Ino: 9, Kind: 6}}
	long.Call.H = whyslowHdr{Ts: 43, Pid: 100, Tid: 101, Kind: evConnRead}
	pings := strings.Repeat("*1\r\n$4\r\nPING\r\n", 70)
	copy(long.Data[:], pings)
	bare := whyslowConnReadEvent{}
	bare.Call = whyslowSyscallEvent{Ret: 3, Nr: 45}
	bare.Call.H = whyslowHdr{Ts: 44, Pid: 100, Tid: 101, Kind: evConnRead}
	for _, tc := range []struct {
		raw     []byte
		ret     int64
		want    string
		arrived uint64
		payload bool
	}{
		{wire(t, short), 5, "GET /", 77, true},
		{wire(t, long), 4000, pings[:900], 0, true},
		{wire(t, long)[:int(unsafe.Sizeof(short))], 4000, pings[:PayloadLen], 0, true},
		{wire(t, bare), 3, "", 0, false},
	} {
		d := newDecoder()
		ev, err := d.decode(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		call, ok := ev.(*event.Syscall)
		if !ok || call.Ret != tc.ret || call.Time == 0 {
			t.Fatalf("decoded %+v, want the read's call", ev)
		}
		x := d.takeExtra()
		if !tc.payload {
			if x != nil {
				t.Errorf("a read with neither bytes nor arrival carried %+v", x)
			}
			continue
		}
		p, ok := x.(*event.Payload)
		if !ok || string(p.Data) != tc.want || p.Arrived != tc.arrived || p.Returned != tc.ret ||
			p.Conn != call.File || p.Header != call.Header {
			t.Errorf("decoded %+v, want %d bytes %.20q arrived %d of a read of %d", x, len(tc.want), tc.want, tc.arrived, tc.ret)
		}
	}
	// One decoder's reads keep their own bytes, whatever is appended to
	// an earlier one's.
	d := newDecoder()
	var kept []*event.Payload
	for _, raw := range [][]byte{wire(t, short), wire(t, long)} {
		if _, err := d.decode(raw); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, d.takeExtra().(*event.Payload))
	}
	_ = append(kept[0].Data, "XXXX"...)
	if string(kept[0].Data) != "GET /" || string(kept[1].Data) != pings[:900] {
		t.Errorf("the reads kept %q and %.20q, want their own bytes", kept[0].Data, kept[1].Data)
	}
	if PayloadBatchLen <= PayloadLen {
		t.Errorf("PAYLOAD_BATCH_LEN %d, not longer than PAYLOAD_LEN %d", PayloadBatchLen, PayloadLen)
	}
	// bpf/conversation.h is generated from internal/event, which the framers'
	// tests read: the wire's lengths are those.
	if PayloadLen != event.PayloadLen || PayloadBatchLen != event.PayloadBatchLen {
		t.Errorf("the wire holds %d and %d bytes, internal/event says %d and %d: run 'make generate'",
			PayloadLen, PayloadBatchLen, event.PayloadLen, event.PayloadBatchLen)
	}
}
