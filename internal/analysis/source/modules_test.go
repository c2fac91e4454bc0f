package source

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
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
