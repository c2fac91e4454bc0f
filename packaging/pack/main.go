// Command pack makes whyslow's release artefacts from a staged tree and
// packaging/nfpm.yaml: the Debian package, with nfpm, and a tarball that
// unpacks to the same tree under one top directory. Both are reproducible:
// every time is SOURCE_DATE_EPOCH, every owner root, the order sorted, and
// gzip records no name or time.
//
// It is a module of its own, so that nfpm's dependencies stay out of
// whyslow's build. Run from the repository's root:
//
//	pack -config packaging/nfpm.yaml -stage dist/root -version V -out dist
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
)

func main() {
	config := flag.String("config", "packaging/nfpm.yaml", "nfpm's description of the package")
	stage := flag.String("stage", "dist/root", "the staged tree: binary, man pages, completions")
	version := flag.String("version", "", "the package's version")
	out := flag.String("out", "dist", "where the artefacts go")
	flag.Parse()
	if err := run(*config, *stage, *version, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pack:", err)
		os.Exit(1)
	}
}

func run(config, stage, version, out string) error {
	if version == "" {
		return errors.New("-version is needed")
	}
	epoch, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH must be set (the commit's time): %w", err)
	}
	mtime := time.Unix(epoch, 0).UTC()
	depends, err := shlibDepends(filepath.Join(stage, "usr/bin/whyslow"))
	if err != nil {
		return err
	}
	vars := map[string]string{"VERSION": version, "STAGE": stage}
	cfg, err := nfpm.ParseFileWithEnvMapping(config, func(k string) string { return vars[k] })
	if err != nil {
		return fmt.Errorf("reading %s: %w", config, err)
	}
	info, err := cfg.Get("deb")
	if err != nil {
		return err
	}
	info.Depends = append(depends, info.Depends...)
	info.MTime = mtime
	info = nfpm.WithDefaults(info)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	debPath := filepath.Join(out, fmt.Sprintf("whyslow_%s_%s.deb", version, info.Arch))
	if err := writeFile(debPath, func(w io.Writer) error { return deb.Default.Package(info, w) }); err != nil {
		return fmt.Errorf("making %s: %w", debPath, err)
	}
	// Package left info.Contents as the package holds them: globs expanded,
	// parent directories added, sorted, with their modes and times.
	top := fmt.Sprintf("whyslow-%s-linux-%s", version, info.Arch)
	tgzPath := filepath.Join(out, top+".tar.gz")
	if err := writeFile(tgzPath, func(w io.Writer) error { return tarball(w, top, info.Contents, mtime) }); err != nil {
		return fmt.Errorf("making %s: %w", tgzPath, err)
	}
	fmt.Printf("%s\n%s\nDepends: %s\n", debPath, tgzPath, strings.Join(info.Depends, ", "))
	return nil
}

// shlibDepends names the packages of the binary's shared libraries, with
// the oldest versions its symbols need, as dpkg-shlibdeps does for Debian's
// own packages ("libc6 (>= 2.34)").
func shlibDepends(binary string) ([]string, error) {
	if _, err := exec.LookPath("dpkg-shlibdeps"); err != nil {
		return nil, errors.New("dpkg-shlibdeps names the package's dependencies: apt-get install dpkg-dev")
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		return nil, err
	}
	// It wants a source package around it: an empty one will do.
	dir, err := os.MkdirTemp("", "whyslow-shlibdeps-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	os.Mkdir(filepath.Join(dir, "debian"), 0o755)
	control := "Source: whyslow\n\nPackage: whyslow\nArchitecture: amd64\n"
	if err := os.WriteFile(filepath.Join(dir, "debian", "control"), []byte(control), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("dpkg-shlibdeps", "-O", "-e", abs)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-shlibdeps %s: %w: %s", binary, err, strings.TrimSpace(stderr.String()))
	}
	for _, line := range strings.Split(string(stdout), "\n") {
		if v, ok := strings.CutPrefix(line, "shlibs:Depends="); ok {
			return strings.Split(v, ", "), nil
		}
	}
	return nil, fmt.Errorf("dpkg-shlibdeps %s named no dependencies", binary)
}

// tarball writes contents under top as a gzipped tar: directories and
// files with their modes, owned by root, all at mtime.
func tarball(w io.Writer, top string, contents files.Contents, mtime time.Time) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	hdr := func(name string, typ byte, mode int64, size int64) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime,
			Uname: "root", Gname: "root", Format: tar.FormatUSTAR}
	}
	if err := tw.WriteHeader(hdr(top+"/", tar.TypeDir, 0o755, 0)); err != nil {
		return err
	}
	for _, c := range contents {
		name := top + "/" + strings.Trim(c.Destination, "/")
		switch c.Type {
		case files.TypeDir, files.TypeImplicitDir:
			if err := tw.WriteHeader(hdr(name+"/", tar.TypeDir, int64(c.Mode().Perm()), 0)); err != nil {
				return err
			}
		case files.TypeFile, files.TypeConfig, files.TypeConfigNoReplace:
			data, err := os.ReadFile(c.Source)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(hdr(name, tar.TypeReg, int64(c.Mode().Perm()), int64(len(data)))); err != nil {
				return err
			}
			if _, err := tw.Write(data); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: a %s has no place in the tarball", c.Destination, c.Type)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// writeFile writes path through a temporary file, so that a failure leaves
// no half artefact.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pack-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
