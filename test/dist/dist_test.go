// Package dist tests what `make dist` makes as a user meets it: built from a
// clean checkout, twice, to the same bytes; the .deb installed with dpkg and
// with apt, whyslow run from /usr/bin, its man pages, units and completions
// checked, and removed without a trace; the tarball the same tree.
//
// It installs a package on this machine: run as root, it removes it again
// (purge) whatever happens, and refuses to start when a whyslow package is
// installed already.
package dist

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// artefacts are the paths `make dist` made in one checkout.
type artefacts struct {
	version, deb, tgz string
}

func TestDist(t *testing.T) {
	harness.RequireRoot(t)
	for _, tool := range []string{"git", "make", "dpkg", "dpkg-deb", "apt-get", "man", "systemd-analyze", "bash", "dpkg-shlibdeps"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (make deps installs it)", tool)
		}
	}
	if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err != nil {
		t.Fatal("bash-completion is needed (make deps installs it)")
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "whyslow").Output(); err == nil && strings.Contains(string(out), "installed") {
		t.Fatal("a whyslow package is installed on this machine already: the test would remove it")
	}
	commit := strings.TrimSpace(run(t, harness.Repo(), "git", "rev-parse", "HEAD"))

	first := makeDist(t, commit)
	second := makeDist(t, commit)
	for _, pair := range [][2]string{{first.deb, second.deb}, {first.tgz, second.tgz}} {
		a, b := digest(t, pair[0]), digest(t, pair[1])
		if a != b {
			t.Errorf("two make dist runs of commit %s differ: %s is %s, then %s", commit[:12], filepath.Base(pair[0]), a[:16], b[:16])
		}
	}

	t.Run("contents", func(t *testing.T) { checkContents(t, first) })
	t.Run("tarball", func(t *testing.T) { checkTarball(t, first) })
	t.Run("dpkg", func(t *testing.T) { installed(t, first, commit, []string{"dpkg", "-i", first.deb}) })
	// apt resolves the dependencies from the packages this machine has: a
	// proxy that refuses every connection shows it downloads nothing, so the
	// test needs no mirror. (apt-get's --no-download would say so better, but
	// apt 2.6 then refuses a local .deb: "Pathname to install is not absolute".)
	t.Run("apt", func(t *testing.T) {
		installed(t, first, commit, []string{"apt-get", "install", "-y", "-q",
			"-o", "Acquire::http::Proxy=http://127.0.0.1:9/", "-o", "Acquire::https::Proxy=http://127.0.0.1:9/",
			"-o", "Acquire::Retries=0", first.deb})
	})
}

// makeDist clones the commit into a new directory, runs `make dist` there
// and returns what it made. Two clones in two places: what a build records
// of its directory would show as a difference.
func makeDist(t *testing.T, commit string) artefacts {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "git", "clone", "-q", "--no-checkout", harness.Repo(), "src")
	src := filepath.Join(dir, "src")
	run(t, src, "git", "checkout", "-q", commit)
	start := time.Now()
	cmd := exec.Command("make", "dist")
	cmd.Dir = src
	cmd.Env = withoutEnv(os.Environ(), "SOURCE_DATE_EPOCH", "MAKEFLAGS", "MAKELEVEL")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	version := strings.TrimSpace(run(t, src, "./scripts/version.sh"))
	a := artefacts{version: version,
		deb: filepath.Join(src, "dist", "whyslow_"+version+"_amd64.deb"),
		tgz: filepath.Join(src, "dist", "whyslow-"+version+"-linux-amd64.tar.gz")}
	for _, p := range []string{a.deb, a.tgz} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("make dist did not make %s: %v", filepath.Base(p), err)
		}
		t.Logf("%s: %.1f MiB", filepath.Base(p), float64(st.Size())/(1<<20))
	}
	t.Logf("make dist in a clean checkout: %.1f s", time.Since(start).Seconds())
	if strings.HasSuffix(version, "dirty") {
		t.Errorf("version %s from a clean checkout", version)
	}
	return a
}

// checkContents reads the package's metadata and binary.
func checkContents(t *testing.T, a artefacts) {
	control := run(t, "", "dpkg-deb", "-f", a.deb)
	for _, want := range []string{"Package: whyslow", "Version: " + a.version, "Architecture: amd64",
		"Maintainer: the whyslow authors\n", "Description: ", "Depends: "} {
		if !strings.Contains(control, want) {
			t.Errorf("control lacks %q:\n%s", want, control)
		}
	}
	// The project publishes no address or page yet: one in the package would
	// be made up (packaging/nfpm.yaml). Name the real one here when there is.
	if strings.Contains(control, "Homepage:") || strings.Contains(control, "@") {
		t.Errorf("control names an address or homepage the project does not have:\n%s", control)
	}
	dir := t.TempDir()
	run(t, "", "dpkg-deb", "-x", a.deb, dir)
	bin := filepath.Join(dir, "usr/bin/whyslow")
	checkNotices(t, bin, filepath.Join(dir, "usr/share/doc/whyslow/THIRD-PARTY-NOTICES"))
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Section(".symtab") != nil || f.Section(".debug_info") != nil {
		t.Error("/usr/bin/whyslow is not stripped")
	}
	// The dependencies are what the binary's symbols need, and the README
	// says the oldest glibc it runs on.
	glibc := newestVersion(t, f, "GLIBC_")
	if !strings.Contains(control, "libc6 (>= "+glibc+")") {
		t.Errorf("the binary needs GLIBC_%s; Depends says otherwise:\n%s", glibc, control)
	}
	readme, _ := os.ReadFile(filepath.Join(harness.Repo(), "README.md"))
	if !strings.Contains(string(readme), "glibc "+glibc+" or later") {
		t.Errorf("README must say the binary runs on glibc %s or later (its newest GLIBC_ symbol version)", glibc)
	}
	libs, _ := f.ImportedLibraries()
	for _, lib := range libs {
		if !strings.Contains(string(readme), "`"+lib+"`") {
			t.Errorf("README must name %s, which the binary links dynamically", lib)
		}
	}
}

// checkNotices: the package carries the licence notices of every Go module
// the binary links (its build info, as `go version -m` reads it), of Go, and
// of DuckDB and the libraries inside it.
func checkNotices(t *testing.T, bin, notices string) {
	text, err := os.ReadFile(notices)
	if err != nil {
		t.Fatalf("the package has no licence notices of what it links: %v", err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Deps) < 10 {
		t.Fatalf("the binary's build info lists %d modules", len(info.Deps))
	}
	// Each component's licence files are quoted under "PATH VERSION: FILE".
	sections := []string{"\nGo " + info.GoVersion + ": LICENSE\n"}
	for _, d := range info.Deps {
		sections = append(sections, "\n"+d.Path+" "+d.Version+": ")
	}
	for _, want := range sections {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("THIRD-PARTY-NOTICES quotes no licence under %q", strings.TrimSpace(want))
		}
	}
	for _, want := range []string{"Stichting DuckDB Foundation", "third_party/re2/LICENSE", "extension/icu/third_party/icu/LICENSE",
		"Unicode, Inc.", "The Go Authors"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("THIRD-PARTY-NOTICES lacks %q", want)
		}
	}
}

// newestVersion is the newest symbol version with this prefix the binary
// needs ("2.34" of GLIBC_2.34).
func newestVersion(t *testing.T, f *elf.File, prefix string) string {
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, prefix); ok && versionLess(newest, v) {
			newest = v
		}
	}
	if newest == "" {
		t.Fatalf("no %s symbol versions in the binary", prefix)
	}
	return newest
}

func versionLess(a, b string) bool {
	if a == "" {
		return true
	}
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

// entry is one path of a tree: its kind, mode, owner and content.
type entry struct {
	typ    byte
	mode   int64
	owner  string
	mtime  int64
	sha256 string
}

// checkTarball compares the tarball, less its top directory, with the
// package's data.
func checkTarball(t *testing.T, a artefacts) {
	deb := exec.Command("dpkg-deb", "--fsys-tarfile", a.deb)
	data, err := deb.Output()
	if err != nil {
		t.Fatalf("dpkg-deb --fsys-tarfile: %v", err)
	}
	fromDeb := readTree(t, bytes.NewReader(data), "./")
	f, err := os.Open(a.tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	top := "whyslow-" + a.version + "-linux-amd64/"
	fromTgz := readTree(t, zr, top)
	delete(fromTgz, "") // the top directory itself
	if len(fromDeb) < 30 {
		t.Fatalf("the package holds %d paths: expected the binary, man pages, completions, units, docs", len(fromDeb))
	}
	for _, p := range sortedKeys(fromDeb, fromTgz) {
		d, inDeb := fromDeb[p]
		g, inTgz := fromTgz[p]
		switch {
		case !inTgz:
			t.Errorf("%s is in the .deb, not in the tarball", p)
		case !inDeb:
			t.Errorf("%s is in the tarball, not in the .deb", p)
		case d != g:
			t.Errorf("%s differs: .deb %+v, tarball %+v", p, d, g)
		}
	}
}

func readTree(t *testing.T, r io.Reader, prefix string) map[string]entry {
	tree := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return tree
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(h.Name, prefix)
		if !ok {
			t.Fatalf("%s is outside %s", h.Name, prefix)
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, tr); err != nil {
			t.Fatal(err)
		}
		typ := h.Typeflag
		if typ == tar.TypeRegA {
			typ = tar.TypeReg
		}
		tree[strings.TrimSuffix(name, "/")] = entry{typ: typ, mode: h.Mode & 0o7777,
			owner: fmt.Sprintf("%d:%d/%s:%s", h.Uid, h.Gid, h.Uname, h.Gname), mtime: h.ModTime.Unix(),
			sha256: hex.EncodeToString(sum.Sum(nil))}
	}
}

// installed installs the package with cmd, checks it as a user would meet
// it, removes it and checks that nothing is left.
func installed(t *testing.T, a artefacts, commit string, cmd []string) {
	t.Cleanup(func() {
		// Whatever happened: the machine as it was.
		exec.Command("dpkg", "--purge", "whyslow").Run()
	})
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	install := exec.Command(cmd[0], cmd[1:]...)
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
	}
	files := strings.Fields(run(t, "", "dpkg-query", "-L", "whyslow"))

	// whyslow from its installed path.
	version := run(t, "/", "/usr/bin/whyslow", "version")
	if !strings.Contains(version, a.version) || !strings.Contains(version, commit) {
		t.Errorf("whyslow version says neither %s nor %s:\n%s", a.version, commit, version)
	}
	for _, want := range []string{"build date:", "go:", "duckdb:", "bpf object: sha256:"} {
		if !strings.Contains(version, want) {
			t.Errorf("whyslow version lacks %q:\n%s", want, version)
		}
	}
	if check, err := exec.Command("/usr/bin/whyslow", "check").CombinedOutput(); err != nil {
		t.Errorf("whyslow check: %v (a missing capability fails the test)\n%s", err, check)
	}
	out, err := exec.Command("/usr/bin/whyslow", "run", "--", "true").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verdict") {
		t.Errorf("whyslow run -- true: %v\n%s", err, out)
	}

	checkManPages(t, files)
	checkUnits(t)
	checkBashCompletion(t)

	// dpkg -r takes away every file it installed; purge the rest of it.
	run(t, "", "dpkg", "-r", "whyslow")
	for _, f := range files {
		st, err := os.Lstat(f)
		if err != nil || st.IsDir() { // directories shared with other packages stay
			continue
		}
		t.Errorf("dpkg -r left %s", f)
	}
	run(t, "", "dpkg", "--purge", "whyslow")
	left, _ := filepath.Glob("/var/lib/dpkg/info/whyslow.*")
	for _, p := range append(left, "/usr/share/doc/whyslow", "/var/lib/whyslow") {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("dpkg --purge left %s", p)
		}
	}
}

// checkManPages renders each page as man does, with its warnings on.
func checkManPages(t *testing.T, files []string) {
	pages := 0
	for _, f := range files {
		if !strings.HasPrefix(f, "/usr/share/man/man1/") || !strings.HasSuffix(f, ".1.gz") {
			continue
		}
		pages++
		cmd := exec.Command("man", "--warnings", "-l", f)
		cmd.Env = append(withoutEnv(os.Environ(), "MAN_KEEP_FORMATTING", "MANPAGER", "PAGER"), "MANWIDTH=80", "LC_ALL=C.UTF-8")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Errorf("man --warnings -l %s: %v\n%s", f, err, stderr.String())
		}
		for _, section := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS"} {
			if !strings.Contains(stdout.String(), "\n"+section+"\n") {
				t.Errorf("%s has no %s section", filepath.Base(f), section)
			}
		}
	}
	for _, want := range []string{"whyslow", "whyslow-run", "whyslow-check", "whyslow-watch", "whyslow-exporter", "whyslow-report-explain", "whyslow-version"} {
		p := "/usr/share/man/man1/" + want + ".1.gz"
		if !slices.Contains(files, p) {
			t.Errorf("no man page %s", p)
		}
	}
	page, _ := exec.Command("man", "-P", "cat", "whyslow-run").Output()
	if !strings.Contains(string(page), "EXAMPLE") {
		t.Errorf("man whyslow-run has no EXAMPLE section (or man does not find it):\n%.500s", page)
	}
	if pages < 20 {
		t.Errorf("%d man pages: expected one per command", pages)
	}
}

// checkUnits asks systemd whether it would load the units.
func checkUnits(t *testing.T) {
	units := []string{"/usr/lib/systemd/system/whyslow-exporter.service", "/usr/lib/systemd/system/whyslow-watch.service"}
	out, err := exec.Command("systemd-analyze", append([]string{"verify"}, units...)...).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes",
			"AmbientCapabilities=CAP_BPF CAP_PERFMON CAP_SYSLOG", "CapabilityBoundingSet=CAP_BPF CAP_PERFMON CAP_SYSLOG"} {
			if !strings.Contains(string(b), "\n"+want+"\n") {
				t.Errorf("%s lacks %s", u, want)
			}
		}
	}
}

// checkBashCompletion loads the installed completion in bash, after
// bash-completion as an interactive shell does, and completes "whyslow re"
// and "whyslow report ex" as a user's tab would.
func checkBashCompletion(t *testing.T) {
	script := `set -e
source /usr/share/bash-completion/bash_completion
source /usr/share/bash-completion/completions/whyslow
complete -p whyslow
compopt() { :; } # bash allows it only under a real tab; the reply is what matters
comp() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
  __start_whyslow whyslow "${@: -1}" "${@: -2:1}"; echo "${COMPREPLY[*]}"; }
comp whyslow re
comp whyslow report ex
`
	out, err := exec.Command("bash", "--norc", "--noprofile", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("loading the bash completion: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`\brecord\b.*\breport\b`).MatchString(lines[1]) || !strings.Contains(lines[2], "explain") {
		t.Errorf("bash completion: want the function registered, then record and report, then explain; got:\n%s", out)
	}
}

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func digest(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

func sortedKeys(maps ...map[string]entry) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}
