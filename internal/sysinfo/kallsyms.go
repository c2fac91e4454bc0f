package sysinfo

import (
	"bufio"
	"bytes"
	"cmp"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"
)

// Kallsyms maps kernel text addresses to function names, sorted by address.
// The names are one string that each symbol's start and end slice: a string
// each was 120k allocations, a third of the parse and twice its memory.
type Kallsyms struct {
	addrs        []uint64
	starts, ends []uint32 // symbol i's name is names[starts[i]:ends[i]]
	names        string
	// byName is every symbol's index, by name, then by address (index):
	// Range looks a name up in it, touching a few pages of the table, not
	// all of it. Nil until indexed (indexNames): Range then reads them all.
	byName []uint32
}

// Len is the number of symbols.
func (k *Kallsyms) Len() int { return len(k.addrs) }

// Symbol is the i-th symbol by address.
func (k *Kallsyms) Symbol(i int) (addr uint64, name string) {
	if start, end := k.starts[i], k.ends[i]; start <= end && int(end) <= len(k.names) {
		name = k.names[start:end]
	}
	return k.addrs[i], name
}

// Kallsyms reads /proc/kallsyms. Without CAP_SYSLOG every address reads as
// zero, and the table comes back empty.
func (fs FS) Kallsyms() (*Kallsyms, error) {
	f, err := os.Open(fs.path("/proc/kallsyms"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseKallsyms(f)
}

// parseKallsyms keeps the text symbols (t, T, w, W) of a kallsyms listing.
// It streams rather than taking the file's bytes: the kernel's table is
// some 10 MB, and read whole it would be copied as it grew. On a read error
// the symbols read before it are returned with it: a stack named in part
// beats one not named at all.
func parseKallsyms(r io.Reader) (*Kallsyms, error) {
	k := &Kallsyms{addrs: make([]uint64, 0, 1<<17), starts: make([]uint32, 0, 1<<17), ends: make([]uint32, 0, 1<<17)}
	blob := make([]byte, 0, 3<<20)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		// "ffffffff81000000 T _stext\t[module]": fixed columns, parsed
		// by hand (strings.Fields on 200k lines cost 100 ms of start-up).
		line := sc.Bytes()
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 || len(line) < sp+4 {
			continue
		}
		switch line[sp+1] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		a, ok := parseHex(line[:sp])
		if !ok || a == 0 {
			continue
		}
		name := line[sp+3:]
		for i, c := range name { // bytes.IndexAny was a quarter of the parse
			if c == '\t' || c == ' ' {
				name = name[:i]
				break
			}
		}
		k.addrs = append(k.addrs, a)
		k.starts = append(k.starts, uint32(len(blob)))
		blob = append(blob, name...)
		k.ends = append(k.ends, uint32(len(blob)))
	}
	k.names = unsafe.String(unsafe.SliceData(blob), len(blob)) // blob is not written again
	if !sort.IsSorted(byAddr{k}) {                             // the kernel's own symbols come sorted; modules may not
		sort.Stable(byAddr{k})
	}
	return k, sc.Err()
}

// parseHex reads an address written in hex, as kallsyms writes it.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// byAddr sorts a table by address.
type byAddr struct{ *Kallsyms }

func (k byAddr) Less(i, j int) bool { return k.addrs[i] < k.addrs[j] }
func (k byAddr) Swap(i, j int) {
	k.addrs[i], k.addrs[j] = k.addrs[j], k.addrs[i]
	k.starts[i], k.starts[j] = k.starts[j], k.starts[i]
	k.ends[i], k.ends[j] = k.ends[j], k.ends[i]
}

// Name names the function an address falls in: the nearest symbol at or
// below it, or the address in hex when it is below them all.
func (k *Kallsyms) Name(ip uint64) string {
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > ip }) - 1
	if i < 0 {
		return "0x" + strconv.FormatUint(ip, 16)
	}
	_, name := k.Symbol(i)
	return name
}

// Range is the addresses of the function name: from its address to the
// next symbol's. ok is false when the table lacks it. Of two symbols of the
// name, the one at the lower address.
func (k *Kallsyms) Range(name string) (lo, hi uint64, ok bool) {
	if k.byName == nil {
		for i := range k.addrs {
			if _, n := k.Symbol(i); n == name && i+1 < len(k.addrs) {
				return k.addrs[i], k.addrs[i+1], true
			}
		}
		return 0, 0, false
	}
	nameAt := func(j int) (int, string) {
		i := int(k.byName[j])
		if i >= len(k.addrs) { // a damaged copy: no name
			return i, ""
		}
		_, n := k.Symbol(i)
		return i, n
	}
	at := sort.Search(len(k.byName), func(j int) bool {
		_, n := nameAt(j)
		return n >= name
	})
	for ; at < len(k.byName); at++ {
		i, n := nameAt(at)
		if n != name {
			break
		}
		if i+1 < len(k.addrs) {
			return k.addrs[i], k.addrs[i+1], true
		}
	}
	return 0, 0, false
}

// indexNames sorts the symbols by name for Range (byName).
func (k *Kallsyms) indexNames() {
	k.byName = make([]uint32, len(k.addrs))
	for i := range k.byName {
		k.byName[i] = uint32(i)
	}
	slices.SortFunc(k.byName, func(a, b uint32) int {
		_, na := k.Symbol(int(a))
		_, nb := k.Symbol(int(b))
		if c := strings.Compare(na, nb); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}
