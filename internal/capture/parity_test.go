package capture

import (
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/whyslow/whyslow/internal/event"
)

// The numbers the kernel side writes and the Go side reads. Enums come from
// bpf2go (-type event_kind, lost_source, file_kind): Go's constants are C's.
// These tests hold the Go side to the whole of each enum as the compiled
// object's BTF has it, so a member added in C is one Go must name, and to
// the #defines of bpf/whyslow.h, which BTF does not carry.

func header(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("../../bpf/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

// objectEnum returns the members of enum name as the committed object's BTF
// holds them, by name.
func objectEnum(t *testing.T, name string) map[string]int {
	t.Helper()
	spec, err := loadWhyslow()
	if err != nil {
		t.Fatal(err)
	}
	var e *btf.Enum
	if err := spec.Types.TypeByName(name, &e); err != nil {
		t.Fatalf("enum %s in the object's BTF: %v", name, err)
	}
	out := map[string]int{}
	for _, v := range e.Values {
		out[v.Name] = int(v.Value)
	}
	if len(out) == 0 {
		t.Fatalf("enum %s has no members", name)
	}
	return out
}

// cDefine returns the value of `#define name N`.
func cDefine(t *testing.T, src, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^#define ` + name + `\s+(-?\d+)`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("#define %s not found", name)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Every kind the C side sends, decode knows: an unknown kind is an error.
func TestParityEventKinds(t *testing.T) {
	kinds := objectEnum(t, "event_kind")
	if len(kinds) < 15 {
		t.Errorf("enum event_kind has %d members", len(kinds))
	}
	for name, v := range kinds {
		raw := make([]byte, 4096)
		raw[kindOffset] = byte(v)
		if _, err := newDecoder().decode(raw); err != nil {
			t.Errorf("%s (%d) does not decode: %v", name, v, err)
		}
	}
}

func TestParityLostSources(t *testing.T) {
	want := objectEnum(t, "lost_source")
	if want["LOST_NR"] != len(LostSources) {
		t.Errorf("LOST_NR = %d, LostSources has %d", want["LOST_NR"], len(LostSources))
	}
	// Go names a source by its C name, lowercased, except where it says more.
	goName := map[string]string{"agg": "aggregate"}
	for name, v := range want {
		if name == "LOST_NR" {
			continue
		}
		c := strings.ToLower(strings.TrimPrefix(name, "LOST_"))
		if g, ok := goName[c]; ok {
			c = g
		}
		if v < 0 || v >= len(LostSources) || LostSources[v] != c {
			t.Errorf("%s = %d: LostSources does not name it %q there", name, v, c)
		}
	}
	for i, name := range LostSources {
		if name == "" || name == LostDecode {
			t.Errorf("lost source %d is named %q", i, name)
		}
	}
}

// event.FileKind is the domain's (no cilium/ebpf import): each of its kinds
// is the generated constant of the same C member.
func TestParityFileKinds(t *testing.T) {
	goKinds := map[string]event.FileKind{"FK_UNKNOWN": event.KindUnknown, "FK_REG": event.KindRegular,
		"FK_DIR": event.KindDir, "FK_CHR": event.KindChar, "FK_BLK": event.KindBlock, "FK_FIFO": event.KindPipe,
		"FK_SOCK_INET": event.KindSocketInet, "FK_SOCK_UNIX": event.KindSocketUnix,
		"FK_SOCK_OTHER": event.KindSocketOther, "FK_LNK": event.KindSymlink, "FK_ANON": event.KindAnon}
	generated := map[string]whyslowFileKind{"FK_UNKNOWN": whyslowFileKindFK_UNKNOWN, "FK_REG": whyslowFileKindFK_REG,
		"FK_DIR": whyslowFileKindFK_DIR, "FK_CHR": whyslowFileKindFK_CHR, "FK_BLK": whyslowFileKindFK_BLK,
		"FK_FIFO": whyslowFileKindFK_FIFO, "FK_SOCK_INET": whyslowFileKindFK_SOCK_INET,
		"FK_SOCK_UNIX": whyslowFileKindFK_SOCK_UNIX, "FK_SOCK_OTHER": whyslowFileKindFK_SOCK_OTHER,
		"FK_LNK": whyslowFileKindFK_LNK, "FK_ANON": whyslowFileKindFK_ANON}
	want := objectEnum(t, "file_kind")
	for name, v := range want {
		g, ok := goKinds[name]
		if !ok || int(g) != v || uint32(generated[name]) != uint32(g) {
			t.Errorf("%s = %d in C, event has %d (present %v)", name, v, g, ok)
		}
	}
	if len(event.FileKinds()) != len(want) {
		t.Errorf("C has %d file kinds, event.FileKinds %d", len(want), len(event.FileKinds()))
	}
}

func TestParityPageSize(t *testing.T) {
	if n := cDefine(t, header(t, "whyslow.h"), "PAGE_SHIFT"); 1<<n != event.PageSize {
		t.Errorf("PAGE_SHIFT = %d, event.PageSize %d", n, event.PageSize)
	}
}

func TestParityStackDepth(t *testing.T) {
	if n := cDefine(t, header(t, "whyslow.h"), "STACK_DEPTH"); n != stackDepth {
		t.Errorf("STACK_DEPTH = %d, stackDepth %d", n, stackDepth)
	}
	if n := cDefine(t, header(t, "whyslow.h"), "STACK_OWN_BASE"); n != stackOwnBase {
		t.Errorf("STACK_OWN_BASE = %d, stackOwnBase %d", n, stackOwnBase)
	}
	if stackOwnBase >= firstSyntheticStack {
		t.Errorf("stacks sent whole (from %d) and stacks of waits begun before capture (from %d) share ids", stackOwnBase, firstSyntheticStack)
	}
}

// The flag bits are checked by what decode makes of each, set alone.
func TestParityFileFlags(t *testing.T) {
	src := header(t, "whyslow.h")
	file := func(flags int) *event.File {
		var w whyslowFileEvent
		w.H = whyslowHdr{Kind: evFile}
		w.F = whyslowFileRef{Ino: 5, Kind: uint32(event.KindRegular)}
		packNames(&w, "x")
		w.Flags = uint16(flags)
		return mustFile(t, wire(t, w))
	}
	if f := file(cDefine(t, src, "FILEF_NO_MOUNT")); !strings.HasPrefix(f.Path, relativePrefix) || f.Deleted || f.Truncated {
		t.Errorf("FILEF_NO_MOUNT decoded as %+v", f)
	}
	if f := file(cDefine(t, src, "FILEF_DELETED")); !f.Deleted || f.Truncated || f.Path != "/x" {
		t.Errorf("FILEF_DELETED decoded as %+v", f)
	}
	if f := file(cDefine(t, src, "FILEF_TRUNCATED")); !f.Truncated || f.Deleted || f.Path != "/x" {
		t.Errorf("FILEF_TRUNCATED decoded as %+v", f)
	}
	// A unix socket's address: its own when bound (the server's end), else
	// its peer's; an abstract one (a leading NUL) as ss writes it.
	unixSock := func(flags int, path string) *event.File {
		var w whyslowFileEvent
		w.H = whyslowHdr{Kind: evFile}
		w.F = whyslowFileRef{Ino: 6, Kind: uint32(event.KindSocketUnix)}
		w.Flags = uint16(flags)
		w.PeerIno = 7
		for i := range path {
			w.UnixPath[i] = int8(path[i])
		}
		w.UnixLen = uint16(len(path))
		return mustFile(t, wire(t, w))
	}
	if f := unixSock(cDefine(t, src, "FILEF_UNIX_BOUND"), "/run/fpm.sock"); f.LocalName() != "/run/fpm.sock" || f.PeerName() != "" || f.PeerIno != 7 {
		t.Errorf("FILEF_UNIX_BOUND decoded as %+v", f)
	}
	if f := unixSock(0, "\x00hidden"); f.PeerName() != "@hidden" || f.LocalName() != "" {
		t.Errorf("a connected unix socket's abstract peer decoded as %+v", f)
	}
}

func TestParityBlockFlags(t *testing.T) {
	src := header(t, "whyslow.h")
	block := func(flags int) *event.Block {
		w := whyslowBlockEvent{Rflags: uint32(flags)}
		w.H = whyslowHdr{Kind: evBlock}
		ev, err := newDecoder().decode(wire(t, w))
		if err != nil {
			t.Fatal(err)
		}
		return ev.(*event.Block)
	}
	if b := block(cDefine(t, src, "BLKF_SYNC")); !b.Sync || b.Meta || b.FUA {
		t.Errorf("BLKF_SYNC decoded as %+v", b)
	}
	if b := block(cDefine(t, src, "BLKF_META")); b.Sync || !b.Meta || b.FUA {
		t.Errorf("BLKF_META decoded as %+v", b)
	}
	if b := block(cDefine(t, src, "BLKF_FUA")); b.Sync || b.Meta || !b.FUA {
		t.Errorf("BLKF_FUA decoded as %+v", b)
	}
}

// Socket families are the kernel's AF_* numbers: the C side compares
// skc_family with them, decode reads addresses by them.
func TestParitySocketFamilies(t *testing.T) {
	known := map[int]bool{unix.AF_UNIX: true, unix.AF_INET: true, unix.AF_INET6: true}
	sources, _ := filepath.Glob("../../bpf/*.bpf.[ch]")
	compared := 0
	for _, path := range sources {
		for _, m := range regexp.MustCompile(`family == (\d+)`).FindAllStringSubmatch(header(t, filepath.Base(path)), -1) {
			compared++
			if n, _ := strconv.Atoi(m[1]); !known[n] {
				t.Errorf("%s compares a family with %d, not AF_UNIX, AF_INET or AF_INET6", path, n)
			}
		}
	}
	if compared == 0 {
		t.Error("no family comparison found in bpf/*.bpf.[ch]: has the code moved?")
	}
	peer := func(family uint16, raddr []byte) netip.AddrPort {
		var w whyslowFileEvent
		w.H = whyslowHdr{Kind: evFile}
		w.F = whyslowFileRef{Ino: 5, Kind: uint32(event.KindSocketInet)}
		w.Family, w.Rport = family, 80
		copy(w.Raddr[:], raddr)
		return mustFile(t, wire(t, w)).Peer
	}
	if p := peer(unix.AF_INET, []byte{10, 0, 0, 1}); p != netip.MustParseAddrPort("10.0.0.1:80") {
		t.Errorf("AF_INET peer %v", p)
	}
	v6 := netip.MustParseAddr("2001:db8::1").As16()
	if p := peer(unix.AF_INET6, v6[:]); p != netip.MustParseAddrPort("[2001:db8::1]:80") {
		t.Errorf("AF_INET6 peer %v", p)
	}
	if p := peer(unix.AF_UNIX, []byte{10, 0, 0, 1}); p.IsValid() {
		t.Errorf("AF_UNIX has a peer address %v", p)
	}
}
