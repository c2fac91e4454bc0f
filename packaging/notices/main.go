// Command notices writes the licence notices of the software a whyslow
// binary is built from, for the packages (`make dist`): Go's (the runtime
// and standard library), each Go module the binary's build info lists, and
// the libraries inside DuckDB's static library.
//
// The modules come from the binary itself (what `go version -m` prints), not
// from go.mod: that is exactly the set linked, where `go list -m all` also
// holds modules only tests and tools use. Their licence files are read from
// the module cache (`go mod download -json` says where each module is).
//
// DuckDB's own licence is in the duckdb-go-bindings module, but the notices
// of the libraries compiled into its static library (ICU, re2, zstd, ...)
// are not: they are kept in packaging/notices/duckdb, taken from DuckDB's
// source at the version linked, and the version they were taken for must be
// the one the binary links.
package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
)

// duckdbModule is the module whose static library is DuckDB.
const duckdbModule = "github.com/duckdb/duckdb-go-bindings"

// goCmd is the go command that built the binary: its GOROOT holds Go's
// licence, its module cache the modules'.
var goCmd = "go"

func main() {
	bin := flag.String("bin", "", "the whyslow binary the notices are for")
	duckdb := flag.String("duckdb", "packaging/notices/duckdb", "the notices of the libraries inside DuckDB")
	out := flag.String("o", "", "the file to write")
	flag.StringVar(&goCmd, "go", "go", "the go command that built the binary")
	flag.Parse()
	if err := run(*bin, *duckdb, *out); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
}

func run(bin, duckdbDir, out string) error {
	if bin == "" || out == "" {
		return errors.New("-bin and -o are needed")
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading the build info of %s: %w", bin, err)
	}
	parts, err := goNotices(info.GoVersion)
	if err != nil {
		return err
	}
	mods, err := moduleNotices(info.Deps)
	if err != nil {
		return err
	}
	parts = append(parts, mods...)
	if v := linkedVersion(info.Deps, duckdbModule); v != "" {
		inside, err := duckdbNotices(duckdbDir, v)
		if err != nil {
			return err
		}
		parts = append(parts, inside)
	}
	var b bytes.Buffer
	write(&b, parts)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// part is one component's notices: its name and version, and its licence
// files by the name to show.
type part struct {
	name, version, about string
	files                []file
}

type file struct {
	name string
	text []byte
}

// licenceName matches the files that hold a component's terms: LICENSE,
// LICENSE.md, LICENSE-APACHE, COPYING, NOTICE, NOTICES, PATENTS... (not
// license.go, which is code).
var licenceName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notices?|patents)(-[a-z0-9.]+|\.(md|txt|rst|markdown))?$`)

// licenceFiles reads the licence files at the root of dir, sorted by name.
func licenceFiles(dir string) ([]file, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || !licenceName.MatchString(e.Name()) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files = append(files, file{e.Name(), text})
	}
	return files, nil
}

// goNotices are the Go distribution's, whose runtime and standard library
// every Go binary holds. The toolchain at hand must be the one that built
// the binary.
func goNotices(version string) ([]part, error) {
	out, err := exec.Command(goCmd, "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("go env GOROOT GOVERSION said %q", out)
	}
	if lines[1] != version {
		return nil, fmt.Errorf("the binary was built by %s, the go at hand is %s: its notices would be another's", version, lines[1])
	}
	files, err := licenceFiles(lines[0])
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no licence in GOROOT %s: %v", lines[0], err)
	}
	return []part{{name: "Go", version: version, about: "the runtime and standard library", files: files}}, nil
}

// moduleNotices reads each module's licence files from the module cache.
// A module without one stops the build: shipping it without its terms is
// what this is for.
func moduleNotices(deps []*debug.Module) ([]part, error) {
	if len(deps) == 0 {
		return nil, nil
	}
	args := []string{"mod", "download", "-json"}
	for _, d := range deps {
		m := used(d)
		if m.Version == "" {
			return nil, fmt.Errorf("module %s is replaced by a directory: its licence cannot be told from the module cache", d.Path)
		}
		args = append(args, m.Path+"@"+m.Version)
	}
	out, err := exec.Command(goCmd, args...).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(exit.Stderr))
		}
		return nil, fmt.Errorf("go mod download: %w", err)
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Version, Dir, Error string }
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go mod download's answer: %w", err)
		}
		if m.Error != "" {
			return nil, fmt.Errorf("module %s@%s: %s", m.Path, m.Version, m.Error)
		}
		dirs[m.Path+"@"+m.Version] = m.Dir
	}
	var parts []part
	for _, d := range deps {
		m := used(d)
		dir := dirs[m.Path+"@"+m.Version]
		if dir == "" {
			return nil, fmt.Errorf("go mod download did not say where %s@%s is", m.Path, m.Version)
		}
		files, err := licenceFiles(dir)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("module %s@%s has no licence file in %s", m.Path, m.Version, dir)
		}
		parts = append(parts, part{name: d.Path, version: m.Version, files: files})
	}
	slices.SortFunc(parts, func(a, b part) int { return strings.Compare(a.name, b.name) })
	return parts, nil
}

// used is the module a dependency's code came from: its replacement, if any.
func used(d *debug.Module) *debug.Module {
	if d.Replace != nil {
		return d.Replace
	}
	return d
}

// linkedVersion is the version of the module path the binary links, "" when
// it links none.
func linkedVersion(deps []*debug.Module, path string) string {
	for _, d := range deps {
		if d.Path == path {
			return used(d).Version
		}
	}
	return ""
}

// duckdbNotices reads the notices of the libraries inside DuckDB from dir,
// whose VERSION file names the duckdb-go-bindings version they were taken
// for (its first line) and DuckDB's (its second): the binary must link
// that one.
func duckdbNotices(dir, linked string) (part, error) {
	v, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		return part{}, fmt.Errorf("the notices of the libraries inside DuckDB: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(v)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != duckdbModule+" "+linked {
		return part{}, fmt.Errorf("%s/VERSION is for %q; the binary links %s %s: take the notices of that DuckDB (%s/README.md)",
			dir, lines[0], duckdbModule, linked, dir)
	}
	p := part{name: "DuckDB", version: strings.TrimSpace(lines[1]),
		about: "the libraries compiled into its static library (" + duckdbModule + ")"}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !licenceName.MatchString(d.Name()) {
			return err
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		p.files = append(p.files, file{filepath.ToSlash(rel), text})
		return nil
	})
	if err == nil && len(p.files) == 0 {
		err = fmt.Errorf("no notices in %s", dir)
	}
	return p, err
}

// write lays the notices out as one text file: a list of the components,
// then each licence file whole.
func write(w io.Writer, parts []part) {
	fmt.Fprintln(w, "Licence notices of the software the whyslow binary is built from, besides")
	fmt.Fprintln(w, "whyslow's own (copyright in this directory). Made by packaging/notices from")
	fmt.Fprintln(w, "the binary's build info and the module cache.")
	fmt.Fprintln(w)
	for _, p := range parts {
		fmt.Fprintf(w, "%s %s", p.name, p.version)
		if p.about != "" {
			fmt.Fprintf(w, ": %s", p.about)
			for _, f := range p.files {
				fmt.Fprintf(w, "\n  %s", f.name)
			}
		}
		fmt.Fprintln(w)
	}
	rule := strings.Repeat("=", 78)
	for _, p := range parts {
		for _, f := range p.files {
			fmt.Fprintf(w, "\n%s\n%s %s: %s\n%s\n\n", rule, p.name, p.version, f.name, rule)
			text := bytes.ReplaceAll(f.text, []byte("\r\n"), []byte("\n"))
			w.Write(text)
			if !bytes.HasSuffix(text, []byte("\n")) {
				fmt.Fprintln(w)
			}
		}
	}
}
