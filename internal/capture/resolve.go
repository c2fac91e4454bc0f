package capture

import (
	"fmt"
	"strings"
	"sync"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// resolver completes paths the kernel could only give relative to a
// filesystem's root (inodes met in the page cache or writeback, without a
// struct file): it prefixes the mount point of the device.
type resolver struct {
	fs     sysinfo.FS
	mu     sync.Mutex
	mounts map[string]string // "major:minor" -> mount point of the filesystem root
	loaded bool
}

func newResolver(fs sysinfo.FS) *resolver { return &resolver{fs: fs} }

func (r *resolver) load() {
	mounts, err := r.fs.RootMounts()
	if err != nil {
		r.mounts = make(map[string]string) // tried again at the next path
		return
	}
	r.mounts = mounts
	r.loaded = true
}

// complete rewrites f.Path in place when it is relative to its filesystem,
// and encodes it as text (event.EncodeText): the decoder left it as the
// kernel's bytes, since a mount point and a path encoded apart need not join
// into the encoding of the whole.
func (r *resolver) complete(f *event.File) {
	if rel, ok := strings.CutPrefix(f.Path, relativePrefix); ok {
		f.Path = event.EncodeText(r.absolute(f.Ref, rel))
	}
}

// absolute is rel, a path from the root of ref's filesystem, from the root
// of ours.
func (r *resolver) absolute(ref event.FileRef, rel string) string {
	maj, min := event.Dev(ref.Dev)
	key := fmt.Sprintf("%d:%d", maj, min)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.loaded {
		r.load()
	}
	mp, ok := r.mounts[key]
	if !ok {
		r.load() // mounted since we last looked
		mp, ok = r.mounts[key]
	}
	switch {
	case rel == "/" && ref.Kind == event.KindBlock:
		return fmt.Sprintf("[metadata %s]", key)
	case !ok:
		return fmt.Sprintf("[dev %s]%s", key, rel)
	case mp == "/":
		return rel
	}
	return mp + rel
}
