package source

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// TestNameLinesAsRegexp: the header lines found by scanning are the ones
// the rule's regexp finds, in every room's modules and on edge cases.
func TestNameLinesAsRegexp(t *testing.T) {
	nameLine := regexp.MustCompile(`(?m)^-- name: ([a-z_0-9]+)[ \t\r]*$`)
	texts := []string{"", "-- name: a", "-- name: a \n-- name: B\n--name: c\n -- name: d\n-- name: e_1\t\nSELECT 1;\n-- name: \n-- name: f g\n-- name: h"}
	files, err := filepath.Glob("../*/sql/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no modules found: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	for _, text := range texts {
		var want [][4]int
		for _, m := range nameLine.FindAllStringSubmatchIndex(text, -1) {
			want = append(want, [4]int{m[0], m[1], m[2], m[3]})
		}
		got := nameLines(text)
		if len(got) != len(want) {
			t.Fatalf("%d header lines, the regexp finds %d, in %.60q", len(got), len(want), text)
		}
		for i := range got {
			// The regexp's match ends after trailing blanks; the name is what counts.
			if got[i][0] != want[i][0] || got[i][2] != want[i][2] || got[i][3] != want[i][3] {
				t.Errorf("header %d: %v, the regexp %v", i, got[i], want[i])
			}
		}
	}
}

// everyRoomsModules are the SQL modules (sql/*.sql) of every analysis
// package that has them, by package, read from disk as each package embeds
// them: a new package's are checked without a line here.
func everyRoomsModules(t *testing.T) map[string]Modules {
	t.Helper()
	dirs, err := filepath.Glob("../*/sql")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Modules{}
	for _, d := range dirs {
		pkg := filepath.Dir(d)
		out[filepath.Base(pkg)] = LoadModules(os.DirFS(pkg))
	}
	for _, want := range []string{"source", "reports", "critpath", "explain", "requests"} {
		if _, ok := out[want]; !ok {
			t.Fatalf("no SQL modules found for %s among %v", want, dirs)
		}
	}
	return out
}

// TestModulesDocumented: every statement of every package's sql/*.sql says
// what it is, and names each parameter it binds and each slot Go fills in
// its header.
func TestModulesDocumented(t *testing.T) {
	for pkg, m := range everyRoomsModules(t) {
		for _, e := range m.Undocumented() {
			t.Errorf("%s: %s", pkg, e)
		}
	}
}

// TestModulesSpeakTheReasons: every reason the modules' SQL compares a wait
// with, or gives one (io_uring's), is a word of event.Reasons: a word
// misspelt there would match no wait, silently. The modules of every
// analysis package: the common macros, reports', critpath's, explain's and
// requests'.
func TestModulesSpeakTheReasons(t *testing.T) {
	known := map[string]bool{}
	for _, r := range event.Reasons {
		known[string(r)] = true
	}
	compared := regexp.MustCompile(`reason\s*(?:=|<>|IN\s*\()\s*('[^']*'(?:\s*,\s*'[^']*')*)`)
	word := regexp.MustCompile(`'([^']*)'`)
	given := regexp.MustCompile(`THEN '([^']*)'`)
	var all []Statement
	for _, m := range everyRoomsModules(t) {
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
