package harness

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPrivilegedPackagesListed: every package with a test that needs root
// (RequireRoot) is in one of the Makefile's lists: SERIAL_PKGS, which
// `make test` runs one at a time after the others, or
// PARALLEL_PRIVILEGED_PKGS, privileged but changing nothing another test
// reads. A package in neither would run beside the pure packages, 2 at a
// time, and a test that makes a slow disk or counts CPU time there would
// fail under their load, or make a test beside it fail.
func TestPrivilegedPackagesListed(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(Repo(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, v := range []string{"SERIAL_PKGS", "PARALLEL_PRIVILEGED_PKGS"} {
		m := regexp.MustCompile(`(?m)^` + v + ` :=(.*)$`).FindSubmatch(mk)
		if m == nil {
			t.Fatalf("no %s in the Makefile", v)
		}
		for _, p := range strings.Fields(string(m[1])) {
			listed[p] = true
		}
	}
	var privileged []string
	err = filepath.WalkDir(Repo(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != Repo() {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || d.Name() == "serial_test.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "harness.RequireRoot(") {
			rel, _ := filepath.Rel(Repo(), filepath.Dir(path))
			if !slices.Contains(privileged, rel) {
				privileged = append(privileged, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(privileged) < 5 {
		t.Fatalf("found %d packages whose tests need root (%v): the search no longer sees them", len(privileged), privileged)
	}
	for _, p := range privileged {
		if !listed[p] {
			t.Errorf("%s has tests that need root, and is in neither SERIAL_PKGS nor PARALLEL_PRIVILEGED_PKGS (Makefile)", p)
		}
	}
}
