package explain

import (
	"os"
	"regexp"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// TestModulesDocumented: every statement of sql/*.sql says what it is, and
// names each parameter it binds and each slot Go fills in its header.
func TestModulesDocumented(t *testing.T) {
	for _, e := range modules.Undocumented() {
		t.Error(e)
	}
}

// TestModulesSpeakTheReasons: every reason the modules' SQL compares a wait
// with, or gives one (io_uring's), is a word of event.Reasons: a
// word misspelt there would match no wait, silently. The modules of every
// analysis package: this one's, source's (the common macros), reports',
// critpath's and requests'.
func TestModulesSpeakTheReasons(t *testing.T) {
	known := map[string]bool{}
	for _, r := range event.Reasons {
		known[string(r)] = true
	}
	compared := regexp.MustCompile(`reason\s*(?:=|<>|IN\s*\()\s*('[^']*'(?:\s*,\s*'[^']*')*)`)
	word := regexp.MustCompile(`'([^']*)'`)
	given := regexp.MustCompile(`THEN '([^']*)'`)
	var all []source.Statement
	for _, m := range []source.Modules{modules, source.LoadModules(os.DirFS("../source")), source.LoadModules(os.DirFS("../reports")),
		source.LoadModules(os.DirFS("../critpath")), source.LoadModules(os.DirFS("../requests"))} {
		all = append(all, m.Statements()...)
	}
	n := 0
	for _, st := range all {
		var words []string
		for _, m := range compared.FindAllStringSubmatch(st.SQL, -1) {
			for _, w := range word.FindAllStringSubmatch(m[1], -1) {
				words = append(words, w[1])
			}
		}
		if st.Name == "target_uring" {
			for _, m := range given.FindAllStringSubmatch(st.SQL, -1) {
				words = append(words, m[1])
			}
		}
		for _, w := range words {
			n++
			if !known[w] {
				t.Errorf("%s (%s): %q is no reason", st.Name, st.File, w)
			}
		}
	}
	t.Logf("%d reason words", n)
	if n < 10 {
		t.Errorf("found %d reason words in the modules: the patterns no longer see them", n)
	}
}
