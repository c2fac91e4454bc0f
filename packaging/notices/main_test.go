package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLicenceNames(t *testing.T) {
	for name, want := range map[string]bool{
		"LICENSE": true, "LICENSE.md": true, "License.txt": true, "LICENSE-APACHE": true, "LICENCE": true,
		"COPYING": true, "NOTICE": true, "NOTICES": true, "PATENTS": true,
		"license.go": false, "LICENSE_test.go": false, "README.md": false, "VERSION": false, "licenses": false,
	} {
		if got := licenceName.MatchString(name); got != want {
			t.Errorf("%s: licence file %v, want %v", name, got, want)
		}
	}
}

// The DuckDB notices kept in the repository are for the bindings go.mod
// requires: an upgrade that does not take them again fails here, before
// make dist refuses it.
func TestDuckDBNoticesMatchGoMod(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", duckdbModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", duckdbModule, err)
	}
	p, err := duckdbNotices("duckdb", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range p.files {
		names[f.name] = true
		if len(bytes.TrimSpace(f.text)) == 0 {
			t.Errorf("%s is empty", f.name)
		}
	}
	for _, want := range []string{"extension/icu/third_party/icu/LICENSE", "third_party/re2/LICENSE", "third_party/zstd/LICENSE", "third_party/tdigest/NOTICES"} {
		if !names[want] {
			t.Errorf("the DuckDB notices lack %s", want)
		}
	}
}

func TestDuckDBNoticesOfAnotherVersionAreRefused(t *testing.T) {
	_, err := duckdbNotices("duckdb", "v0.99999.0")
	if err == nil || !strings.Contains(err.Error(), "v0.99999.0") || !strings.Contains(err.Error(), "README.md") {
		t.Errorf("notices for another DuckDB: %v, want a refusal naming the version linked and the README", err)
	}
}

// A module without a licence file stops the build.
func TestModuleWithoutLicenceIsRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "license.go"), []byte("package x\n"), 0o644)
	files, err := licenceFiles(dir)
	if err != nil || len(files) != 0 {
		t.Errorf("licence files of a module with only license.go: %v, %v", files, err)
	}
}

func TestWriteListsThenQuotesWhole(t *testing.T) {
	var b bytes.Buffer
	write(&b, []part{
		{name: "example.org/a", version: "v1.0.0", files: []file{{"LICENSE", []byte("line one\r\nline two")}}},
		{name: "DuckDB", version: "v1.5.3", about: "inside", files: []file{{"third_party/x/LICENSE", []byte("x terms\n")}}},
	})
	got := b.String()
	for _, want := range []string{"example.org/a v1.0.0\n", "DuckDB v1.5.3: inside\n  third_party/x/LICENSE\n",
		"example.org/a v1.0.0: LICENSE\n", "line one\nline two\n", "DuckDB v1.5.3: third_party/x/LICENSE\n", "x terms\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("notices lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\r") {
		t.Error("a CRLF licence kept its CRs")
	}
}
