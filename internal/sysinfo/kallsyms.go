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
)

// Kallsyms maps kernel text addresses to function names, sorted by address.
type Kallsyms struct {
	Addrs []uint64
	Names []string
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
	type sym struct {
		a uint64
		n string
	}
	all := make([]sym, 0, 1<<17)
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
		a, err := strconv.ParseUint(string(line[:sp]), 16, 64)
		if err != nil || a == 0 {
			continue
		}
		name := line[sp+3:]
		if end := bytes.IndexAny(name, " \t"); end >= 0 {
			name = name[:end]
		}
		all = append(all, sym{a, string(name)})
	}
	byAddr := func(x, y sym) int { return cmp.Compare(x.a, y.a) }
	if !slices.IsSortedFunc(all, byAddr) { // the kernel's own symbols come sorted
		slices.SortFunc(all, byAddr)
	}
	k := &Kallsyms{Addrs: make([]uint64, len(all)), Names: make([]string, len(all))}
	for i, s := range all {
		k.Addrs[i], k.Names[i] = s.a, s.n
	}
	return k, sc.Err()
}

// Name names the function an address falls in: the nearest symbol at or
// below it, or the address in hex when it is below them all.
func (k *Kallsyms) Name(ip uint64) string {
	i := sort.Search(len(k.Addrs), func(i int) bool { return k.Addrs[i] > ip }) - 1
	if i < 0 {
		return "0x" + strconv.FormatUint(ip, 16)
	}
	return k.Names[i]
}
