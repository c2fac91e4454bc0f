package source

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// heldStory is the first story's recording, held until the test ends.
func heldStory(t *testing.T) *Source {
	t.Helper()
	rec, err := store.Open(storetest.Stories[0].Record(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return storetest.Held(t, New(rec).Hold)
}

// TestMacrosSpeakAsGo: the macros that put our vocabulary into SQL say
// what the Go words say, for every reason and every syscall whyslow names.
func TestMacrosSpeakAsGo(t *testing.T) {
	s := heldStory(t)
	for _, r := range event.Reasons {
		var storage bool
		if err := s.QueryRow("SELECT is_storage($1)", string(r)).Scan(&storage); err != nil {
			t.Fatal(err)
		}
		if storage != r.Disk() {
			t.Errorf("is_storage(%s) %v, Disk %v", r, storage, r.Disk())
		}
	}
	for _, nc := range event.SyscallNames() {
		name, class := nc[0], nc[1]
		var moves, read, write bool
		if err := s.QueryRow("SELECT moves_bytes($1), is_read($2, $1), is_write($2, $1)", name, class).Scan(&moves, &read, &write); err != nil {
			t.Fatal(err)
		}
		if moves != event.SyscallMovesBytes(name) || read != event.Reads.Has(class, name) || write != event.Writes.Has(class, name) {
			t.Errorf("%s (%s): SQL moves bytes %v, reads %v, writes %v; Go %v, %v, %v", name, class, moves, read, write,
				event.SyscallMovesBytes(name), event.Reads.Has(class, name), event.Writes.Has(class, name))
		}
	}
}

// TestTrafficMacro: traffic(fkind) splits file kinds as
// event.FileKind.Traffic does.
func TestTrafficMacro(t *testing.T) {
	s := heldStory(t)
	for _, k := range event.FileKinds() {
		var got string
		if err := s.QueryRow("SELECT traffic(?)", k.String()).Scan(&got); err != nil || got != k.Traffic() {
			t.Errorf("traffic(%q) = %q (%v), want %q", k, got, err, k.Traffic())
		}
	}
}
