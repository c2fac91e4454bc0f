package recorder

import (
	"errors"
	"io/fs"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/whyslow/whyslow/internal/event"
)

// maxGoneFiles bounds the memory spent remembering files: past it, files
// described later are not checked.
const maxGoneFiles = 200_000

// goneFiles remembers the regular files described during a recording so the
// end can say which no longer exist. At the default level no unlink is
// hooked, and a temporary file written and removed within the recording is
// otherwise never seen deleted (the Flask story's 1000 temp files a request).
type goneFiles struct {
	mu     sync.Mutex
	byPath map[string]event.File
}

func newGoneFiles() *goneFiles { return &goneFiles{byPath: map[string]event.File{}} }

// note keeps the latest description of each regular file's path.
func (g *goneFiles) note(batch []event.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ev := range batch {
		f, ok := ev.(*event.File)
		if !ok || f.Ref.Kind != event.KindRegular || f.Deleted || f.Truncated || f.Path == "" || f.Path[0] != '/' {
			continue
		}
		if _, seen := g.byPath[f.Path]; !seen && len(g.byPath) >= maxGoneFiles {
			continue
		}
		g.byPath[f.Path] = *f
	}
}

// gone describes again, deleted, every remembered file whose path no longer
// names its inode, as of time now.
func (g *goneFiles) gone(now uint64) []event.Event {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []event.Event
	for path, f := range g.byPath {
		var st unix.Stat_t
		err := unix.Stat(event.DecodeText(path), &st) // the name's own bytes
		if err == nil && st.Ino == f.Ref.Ino {
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // unreadable, not gone
		}
		d := f
		d.Time = now
		d.Deleted = true
		out = append(out, &d)
	}
	return out
}
