// Command gendocs writes what is generated from whyslow's cobra commands for
// the packages: a man page per command (whyslow(1), whyslow-run(1), ...),
// gzipped as Debian ships them, and the bash, zsh and fish completions, in
// the places a package installs them under -root. The pages' date is
// SOURCE_DATE_EPOCH's, and gzip records no name or time: the same commit
// gives the same bytes.
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/whyslow/whyslow/internal/cli"
)

// Where a Debian package puts man pages and completions.
const (
	manDir  = "usr/share/man/man1"
	bashDir = "usr/share/bash-completion/completions"
	zshDir  = "usr/share/zsh/vendor-completions"
	fishDir = "usr/share/fish/vendor_completions.d"
)

func main() {
	root := flag.String("root", "", "the package tree to write into")
	version := flag.String("version", "", "whyslow's version, for the pages' footer")
	flag.Parse()
	if err := run(*root, *version); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(root, version string) error {
	if root == "" || version == "" {
		return errors.New("-root and -version are needed")
	}
	epoch, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH must be set (the commit's time): %w", err)
	}
	date := time.Unix(epoch, 0).UTC()
	cmd := cli.Command()
	if err := manPages(cmd, filepath.Join(root, manDir), version, date); err != nil {
		return err
	}
	return completions(cmd, root)
}

// manPages writes one gzipped page per command. cobra/doc reads a command's
// Long text as markdown; ours is plain text, so it is made markdown first,
// and every page gets the exit codes.
func manPages(root *cobra.Command, dir, version string, date time.Time) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root.Long = strings.TrimSpace(strings.TrimSuffix(root.Long, cli.ExitCodesHelp))
	header := &doc.GenManHeader{Section: "1", Date: &date, Source: "whyslow " + version, Manual: "whyslow manual"}
	var pages []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root || c.IsAdditionalHelpTopicCommand() {
			return
		}
		pages = append(pages, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range pages {
		c.DisableAutoGenTag = true // its HISTORY section would say only "generated"
		c.Long = markdown(c.Long)
		if c.Long == "" {
			c.Long = markdown(c.Short)
		}
		c.Long += "\n\n# EXIT STATUS\n" + markdown(exitStatus())
	}
	for _, c := range pages {
		var b bytes.Buffer
		h := *header
		if err := doc.GenMan(c, &h, &b); err != nil {
			return fmt.Errorf("generating the page of %s: %w", c.CommandPath(), err)
		}
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1.gz"
		if err := writeGzip(filepath.Join(dir, name), b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// exitStatus is the exit-code table, as `whyslow --help` ends with it.
func exitStatus() string {
	s := strings.TrimPrefix(cli.ExitCodesHelp, "Exit codes:\n")
	return s + "\n\nThe whole table, with the cases each code covers: /usr/share/doc/whyslow/exit-codes.md."
}

// markdown turns a Long text into markdown that reads as it does in --help:
// indented lines (tables, flag lists, commands) stay as they are, in a
// preformatted block; other lines are paragraphs, with markdown's special
// characters escaped.
func markdown(text string) string {
	var out []string
	var pre []string
	flush := func() {
		if len(pre) > 0 {
			out = append(out, "```\n"+strings.Join(pre, "\n")+"\n```")
			pre = nil
		}
	}
	var para []string
	flushPara := func() {
		if len(para) > 0 {
			out = append(out, strings.Join(para, "\n"))
			para = nil
		}
	}
	for _, line := range strings.Split(strings.Trim(text, "\n"), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flushPara()
			flush()
		case strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t"):
			flushPara()
			pre = append(pre, line)
		default:
			flush()
			para = append(para, escape(line))
		}
	}
	flushPara()
	flush()
	return strings.Join(out, "\n\n")
}

var escaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`,
	"<", `\<`, ">", `\>`, "#", `\#`, "|", `\|`)

// escape keeps a line of plain text plain in markdown, and a line that
// begins like a list item ("1. ", "- ", "+ ") from becoming one.
func escape(line string) string {
	s := escaper.Replace(line)
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = `\` + s
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && s[i] == '.' {
		s = s[:i] + `\` + s[i:]
	}
	return s
}

// completions writes what `whyslow completion bash|zsh|fish` prints, where
// each shell looks for a package's completions.
func completions(root *cobra.Command, dir string) error {
	for _, c := range []struct {
		dir, name string
		gen       func(*bytes.Buffer) error
	}{
		{bashDir, "whyslow", func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) }},
		{zshDir, "_whyslow", func(b *bytes.Buffer) error { return root.GenZshCompletion(b) }},
		{fishDir, "whyslow.fish", func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) }},
	} {
		var b bytes.Buffer
		if err := c.gen(&b); err != nil {
			return fmt.Errorf("generating %s: %w", c.name, err)
		}
		if err := os.MkdirAll(filepath.Join(dir, c.dir), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.dir, c.name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeGzip compresses as `gzip -9n` does: no name, no time.
func writeGzip(path string, data []byte) error {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}
