package sysinfo

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// KallsymsCache is where capture keeps its copy of the kernel's symbols:
// /run is memory, emptied at every boot, and only root writes there.
const KallsymsCache = "/run/whyslow"

// CachedKallsyms reads the kernel's text symbols as Kallsyms does, from a
// copy in dir when one was made in this boot with the same modules loaded.
// Reading /proc/kallsyms costs the kernel ~50 ms of CPU to format 120k
// lines, and their parse 15 ms and 5 MB more, at every start of a capture;
// the copy is mapped, so only the pages a lookup touches are read. Symbols
// of BPF programs, which come and go without a module, are the ones of the
// boot's first capture. When dir cannot be written (not root), the symbols
// are read from /proc/kallsyms each time.
func (fsys FS) CachedKallsyms(dir string) (*Kallsyms, error) {
	key, ok := fsys.kallsymsKey()
	if !ok {
		return fsys.Kallsyms()
	}
	path := filepath.Join(dir, kallsymsFile)
	if k := mapKallsyms(path, key); k != nil {
		return k, nil
	}
	k, err := fsys.Kallsyms()
	if err == nil && k.Len() > 0 {
		k.indexNames()
		saveKallsyms(dir, path, key, k) // best effort: the next start reads /proc again
	}
	return k, err
}

// kallsymsKey names the kernel's symbols: this boot, these modules where
// they are loaded.
func (fsys FS) kallsymsKey() ([32]byte, bool) {
	boot, err := os.ReadFile(fsys.path("/proc/sys/kernel/random/boot_id"))
	if err != nil || len(bytes.TrimSpace(boot)) == 0 {
		return [32]byte{}, false
	}
	modules, err := os.ReadFile(fsys.path("/proc/modules"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // a kernel without modules has none
		return [32]byte{}, false
	}
	return sha256.Sum256(append(append(boot, 0), modules...)), true
}

// The copy's layout: a header, then the table's arrays as they are in
// memory (this machine's byte order: addresses, the names' starts and
// ends, the symbols by name), then the names. Version 2 added the symbols
// by name: a lookup by name (Range) reads a few pages, where a scan of
// every name put the whole copy, 5 MB, in the process's memory.
const kallsymsMagic = "whyslowK\x02\x00\x00\x00"

// kallsymsFile is the copy's name in its directory, one for each version
// of the layout: a whyslow of another version beside this one keeps its
// own copy, rather than each replacing the other's at every start.
const kallsymsFile = "kallsyms-v2"

type kallsymsHeader struct {
	Magic    [12]byte
	N, Names uint32
	_        uint32
	Key      [32]byte
}

const kallsymsHeaderSize = int(unsafe.Sizeof(kallsymsHeader{})) // 56: the addresses that follow are aligned

// mapKallsyms maps a copy made for key, or returns nil. The mapping lives
// as long as the process, as the table read from /proc does.
func mapKallsyms(path string, key [32]byte) *Kallsyms {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
		int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 || st.Size < int64(kallsymsHeaderSize) {
		return nil // only a private copy of our own
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	h := (*kallsymsHeader)(unsafe.Pointer(&data[0]))
	n, names := int(h.N), int(h.Names)
	if string(h.Magic[:]) != kallsymsMagic || h.Key != key || n == 0 || names == 0 ||
		len(data) != kallsymsHeaderSize+20*n+names {
		unix.Munmap(data)
		return nil
	}
	at := kallsymsHeaderSize
	k := &Kallsyms{addrs: unsafe.Slice((*uint64)(unsafe.Pointer(&data[at])), n)}
	at += 8 * n
	k.starts = unsafe.Slice((*uint32)(unsafe.Pointer(&data[at])), n)
	at += 4 * n
	k.ends = unsafe.Slice((*uint32)(unsafe.Pointer(&data[at])), n)
	at += 4 * n
	k.byName = unsafe.Slice((*uint32)(unsafe.Pointer(&data[at])), n)
	at += 4 * n
	k.names = unsafe.String(&data[at], names)
	return k
}

// saveKallsyms writes the copy under another name and renames it: a reader
// sees a whole copy or none.
func saveKallsyms(dir, path string, key [32]byte, k *Kallsyms) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "kallsyms.*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after a successful rename, nothing
	h := kallsymsHeader{N: uint32(k.Len()), Names: uint32(len(k.names)), Key: key}
	copy(h.Magic[:], kallsymsMagic)
	n := k.Len()
	for _, b := range [][]byte{
		unsafe.Slice((*byte)(unsafe.Pointer(&h)), kallsymsHeaderSize),
		unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(k.addrs))), 8*n),
		unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(k.starts))), 4*n),
		unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(k.ends))), 4*n),
		unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(k.byName))), 4*n),
		unsafe.Slice(unsafe.StringData(k.names), len(k.names)),
	} {
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
