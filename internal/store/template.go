package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/duckdb/duckdb-go/v2/mapping"
	"golang.org/x/sys/unix"
)

// A new recording starts as a copy of an empty one when it can. Creating
// the tables and views costs DuckDB ~30 ms of CPU at every start (each view
// is bound as it is made); opening a file that holds them reads its catalog
// in ~5. The empty recording is made at the boot's first recording, beside
// the kernel's symbols (sysinfo.KallsymsCache: /run, root only), named by
// what it holds: the schema's statements and DuckDB's version.

// TemplateDir is where the empty recording is kept; "" makes every
// recording from scratch (tests).
var TemplateDir = "/run/whyslow"

// schemaSQL makes a recording's tables and views and its first metadata, in
// one transaction: DuckDB syncs its WAL at every commit.
func schemaSQL() string {
	var ddl strings.Builder
	ddl.WriteString("BEGIN TRANSACTION;\n")
	for _, t := range tables {
		fmt.Fprintf(&ddl, "CREATE TABLE %s (%s);\n", t.name, t.columns)
	}
	for _, v := range views {
		ddl.WriteString(v + ";\n")
	}
	fmt.Fprintf(&ddl, "INSERT INTO meta VALUES ('schema_version', '%d'), ('format', 'whyslow-recording');\n", SchemaVersion)
	ddl.WriteString("COMMIT;\n")
	return ddl.String()
}

// templatePath is the empty recording's name in dir: another schema or
// another DuckDB has another.
func templatePath(dir string) string {
	sum := sha256.Sum256([]byte(mapping.LibraryVersion() + "\x00" + schemaSQL()))
	return filepath.Join(dir, "recording-"+hex.EncodeToString(sum[:8])+".db")
}

// copyTemplate writes a copy of dir's empty recording at path, a new file,
// and says whether it did. Only a private file of our own is copied.
func copyTemplate(dir, path string) bool {
	if dir == "" {
		return false
	}
	src, err := os.OpenFile(templatePath(dir), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer src.Close()
	var st unix.Stat_t
	if unix.Fstat(int(src.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
		int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		return false
	}
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666) // as DuckDB makes it
	if err != nil {
		return false
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err != nil || cerr != nil {
		os.Remove(path)
		return false
	}
	return true
}

// saveTemplate keeps a copy of path, a recording just made and checkpointed
// before any row but the first metadata, as dir's empty recording. Written
// under another name and renamed: a reader copies a whole file or none.
// Best effort: without it, the next recording is made from scratch.
func saveTemplate(dir, path string) {
	if dir == "" || os.MkdirAll(dir, 0o700) != nil {
		return
	}
	src, err := os.Open(path)
	if err != nil {
		return
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, "recording.*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing
	_, err = io.Copy(tmp, src)
	if cerr := tmp.Close(); err != nil || cerr != nil {
		return
	}
	// Templates of other versions go: one empty recording is kept.
	old, _ := filepath.Glob(filepath.Join(dir, "recording-*.db"))
	for _, o := range old {
		os.Remove(o)
	}
	os.Rename(tmp.Name(), templatePath(dir))
}

// dropTemplate removes dir's empty recording: a recording copied from it
// could not be opened.
func dropTemplate(dir string) {
	if dir != "" {
		os.Remove(templatePath(dir))
	}
}
