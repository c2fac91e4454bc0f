package explain

import (
	"database/sql"
	"fmt"
	"sort"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// Disk reads that are the filesystem's own: a directory's blocks for
// getdents64, an inode's for a stat or an open's path walk. A tree walk on
// a cold cache (find, du, git status, rsync's scan) waits on these, and
// reads little file data: its verdict said "read 1.2 MiB, most waited on
// libpcre2.so" (the program's own libraries) for 35 MiB of directories.

// MetadataRead is a thread's disk-read waits in calls that read the
// filesystem's metadata, not a file's data, with what the target read of
// it from disk.
type MetadataRead struct {
	Calls []CallWaits `json:"calls"` // the metadata calls, most waited first (at most 3)
	Bytes uint64      `json:"bytes"` // read from disk for no file: directories, inodes (the target's, all threads)
}

// CallWaits is one syscall's waits.
type CallWaits struct {
	Syscall string  `json:"syscall"`
	Waits   uint64  `json:"waits"`
	S       float64 `json:"s"`
}

// metadataCalls read the filesystem's metadata from disk when they wait:
// directories, inodes, links, along a path's walk.
var metadataCalls = map[string]bool{
	"getdents64": true, "getdents": true, "newfstatat": true, "statx": true, "stat": true, "lstat": true,
	"fstat": true, "access": true, "faccessat": true, "faccessat2": true, "readlink": true, "readlinkat": true,
	"openat": true, "open": true, "openat2": true, "chdir": true, "fchdir": true, "execve": true,
	"getxattr": true, "lgetxattr": true, "listxattr": true, "llistxattr": true,
}

// diskReads are the target's disk-read waits by thread and syscall, and
// its bytes of metadata read from disk: what a disk-read verdict needs
// to tell a tree walk from a file's reads.
type diskReads struct {
	byTID         map[uint32][]CallWaits
	metadataBytes uint64
}

func (x *Explanation) loadDiskReads(s *Source, win source.Window) error {
	x.diskReads = diskReads{byTID: map[uint32][]CallWaits{}}
	if x.Time.OffCPUS["disk-read"] == 0 {
		return nil
	}
	rows, err := s.Query(sqlOf("disk_read_calls"))
	if err != nil {
		return fmt.Errorf("summing disk reads by call: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tid uint32
		var c CallWaits
		var ns float64
		if err := rows.Scan(&tid, &c.Syscall, &c.Waits, &ns); err != nil {
			return err
		}
		c.S = ns / 1e9
		x.diskReads.byTID[tid] = append(x.diskReads.byTID[tid], c)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := s.QueryRow(sqlOf("metadata_read_bytes"), sql.Named("b", win.Begin), sql.Named("e", win.End)).Scan(&x.diskReads.metadataBytes); err != nil {
		return fmt.Errorf("summing metadata reads: %w", err)
	}
	return nil
}

// metadataRead is tid's disk reads when most of their time was in
// metadata calls, else nil.
func (x *Explanation) metadataRead(tid uint32) *MetadataRead {
	var all, meta float64
	var calls []CallWaits
	for _, c := range x.diskReads.byTID[tid] {
		all += c.S
		if metadataCalls[c.Syscall] {
			meta += c.S
			calls = append(calls, c)
		}
	}
	if meta == 0 || 2*meta < all {
		return nil
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].S > calls[j].S })
	if len(calls) > 3 {
		calls = calls[:3]
	}
	return &MetadataRead{Calls: calls, Bytes: x.diskReads.metadataBytes}
}
