package capture

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

func TestResolverComplete(t *testing.T) {
	root := t.TempDir()
	mountinfo := filepath.Join(root, "proc/self/mountinfo")
	os.MkdirAll(filepath.Dir(mountinfo), 0o755)
	os.WriteFile(mountinfo, []byte("27 1 254:0 / / rw - ext4 /dev/vda rw\n"+
		"61 27 254:16 / /data rw - xfs /dev/vdb rw\n"), 0o644)
	r := newResolver(sysinfo.FS{Root: root})
	dev := func(maj, min uint32) uint32 { return maj<<20 | min }
	for _, tc := range []struct {
		path string
		ref  event.FileRef
		want string
	}{
		{relativePrefix + "/etc/hosts", event.FileRef{Dev: dev(254, 0), Kind: event.KindRegular}, "/etc/hosts"},
		{relativePrefix + "/pg/wal/0001", event.FileRef{Dev: dev(254, 16), Kind: event.KindRegular}, "/data/pg/wal/0001"},
		{relativePrefix + "/x", event.FileRef{Dev: dev(8, 1), Kind: event.KindRegular}, "[dev 8:1]/x"},
		{relativePrefix + "/", event.FileRef{Dev: dev(254, 16), Kind: event.KindBlock}, "[metadata 254:16]"},
		{"/already/absolute", event.FileRef{Dev: dev(8, 1), Kind: event.KindRegular}, "/already/absolute"},
		// the kernel's bytes, completed, then encoded as text (event.EncodeText)
		{relativePrefix + "/bad\xffname", event.FileRef{Dev: dev(254, 16), Kind: event.KindRegular}, `/data/bad\xffname`},
		{relativePrefix + "/a\\b\xe9", event.FileRef{Dev: dev(8, 1), Kind: event.KindRegular}, `[dev 8:1]/a\\b\xe9`},
	} {
		f := &event.File{Path: tc.path, Ref: tc.ref}
		r.complete(f)
		if f.Path != tc.want {
			t.Errorf("complete(%q on %v) = %q, want %q", tc.path, tc.ref, f.Path, tc.want)
		}
	}
	// A filesystem mounted after the first look is found by looking again.
	os.WriteFile(mountinfo, []byte("27 1 254:0 / / rw - ext4 /dev/vda rw\n70 27 8:1 / /mnt rw - ext4 /dev/sda1 rw\n"), 0o644)
	f := &event.File{Path: relativePrefix + "/x", Ref: event.FileRef{Dev: dev(8, 1), Kind: event.KindRegular}}
	if r.complete(f); f.Path != "/mnt/x" {
		t.Errorf("after a new mount, %q", f.Path)
	}
}
