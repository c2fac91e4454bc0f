package analysis

import (
	"regexp"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestModulesDocumented: every statement of sql/*.sql says what it is, and
// names each parameter it binds and each slot Go fills in its header.
func TestModulesDocumented(t *testing.T) {
	param := regexp.MustCompile(`\$([a-z_0-9]+)`)
	for name, st := range modules {
		if st.doc == "" {
			t.Errorf("%s (%s): no header comment", name, st.file)
		}
		for _, m := range append(param.FindAllStringSubmatch(st.sql, -1), slot.FindAllStringSubmatch(st.sql, -1)...) {
			if !strings.Contains(st.doc, m[0]) {
				t.Errorf("%s (%s): %s not in its header", name, st.file, m[0])
			}
		}
	}
}

// TestMacrosSpeakAsGo: the macros that put our vocabulary into SQL say
// what the Go words say, for every reason and every syscall whyslow names.
func TestMacrosSpeakAsGo(t *testing.T) {
	rec, err := store.Open(storetest.Stories[0].Record(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	s := heldSource(t, rec)
	for _, r := range event.Reasons {
		var storage bool
		if err := s.queryRow("SELECT is_storage($1)", string(r)).Scan(&storage); err != nil {
			t.Fatal(err)
		}
		if storage != r.Disk() {
			t.Errorf("is_storage(%s) %v, Disk %v", r, storage, r.Disk())
		}
	}
	for _, nc := range event.SyscallNames() {
		name, class := nc[0], nc[1]
		var moves, read, write bool
		if err := s.queryRow("SELECT moves_bytes($1), is_read($2, $1), is_write($2, $1)", name, class).Scan(&moves, &read, &write); err != nil {
			t.Fatal(err)
		}
		if moves != event.SyscallMovesBytes(name) || read != reads.has(class, name) || write != writes.has(class, name) {
			t.Errorf("%s (%s): SQL moves bytes %v, reads %v, writes %v; Go %v, %v, %v", name, class, moves, read, write,
				event.SyscallMovesBytes(name), reads.has(class, name), writes.has(class, name))
		}
	}
}

// TestModulesSpeakTheReasons: every reason the modules' SQL compares a wait
// with, or gives one (io_uring's), is a word of event.Reasons, or idle: a
// word misspelt there would match no wait, silently.
func TestModulesSpeakTheReasons(t *testing.T) {
	known := map[string]bool{string(event.ReasonIdle): true}
	for _, r := range event.Reasons {
		known[string(r)] = true
	}
	compared := regexp.MustCompile(`reason\s*(?:=|<>|IN\s*\()\s*('[^']*'(?:\s*,\s*'[^']*')*)`)
	word := regexp.MustCompile(`'([^']*)'`)
	given := regexp.MustCompile(`THEN '([^']*)'`)
	n := 0
	for name, st := range modules {
		var words []string
		for _, m := range compared.FindAllStringSubmatch(st.sql, -1) {
			for _, w := range word.FindAllStringSubmatch(m[1], -1) {
				words = append(words, w[1])
			}
		}
		if name == "target_uring" {
			for _, m := range given.FindAllStringSubmatch(st.sql, -1) {
				words = append(words, m[1])
			}
		}
		for _, w := range words {
			n++
			if !known[w] {
				t.Errorf("%s (%s): %q is no reason", name, st.file, w)
			}
		}
	}
	t.Logf("%d reason words", n)
	if n < 10 {
		t.Errorf("found %d reason words in the modules: the patterns no longer see them", n)
	}
}

// TestTrafficMacro: traffic(fkind) splits file kinds as
// event.FileKind.Traffic does.
func TestTrafficMacro(t *testing.T) {
	rec, err := store.Open(storetest.Stories[0].Record(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	s, release, err := NewSource(rec).hold()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, k := range event.FileKinds() {
		var got string
		if err := s.queryRow("SELECT traffic(?)", k.String()).Scan(&got); err != nil || got != k.Traffic() {
			t.Errorf("traffic(%q) = %q (%v), want %q", k, got, err, k.Traffic())
		}
	}
}
