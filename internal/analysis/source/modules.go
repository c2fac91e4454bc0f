package source

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

// The analyses' SQL lives in modules, sql/*.sql beside the Go of each
// analysis package, by subject, as Perfetto keeps its standard library: each
// statement under a header line
//
//	-- name: target_offcpu
//
// followed by comment lines that say what it makes, its parameters (bound
// by name, $b, or as lists, $pids: never written into the text), its slots
// for a filter's conditions ({{where}}, Modules.Where) and its columns.
// The DuckDB macros among them (CREATE OR REPLACE TEMP MACRO) are made on
// every connection an analysis holds (Hold): this package's, those every
// analysis may use, first, then those the packages registered
// (RegisterMacros). The other statements are run by name on that
// connection.

//go:embed sql/*.sql
var moduleFiles embed.FS

// common are the macros every analysis may use (sql/macros.sql).
var common = LoadModules(moduleFiles)

// registered are the macros of the analysis packages' own modules
// (RegisterMacros), in the order registered.
var registered []string

// RegisterMacros adds a package's macros to those every held connection is
// made with, after the common ones; called once, from the package's init,
// as database/sql's drivers register. Every connection is then made the
// same whichever analysis holds it: a macro over a table the recording
// lacks (a damaged file) fails every analysis alike, at once.
func RegisterMacros(m Modules) {
	if mac := m.Macros(); mac != "" {
		registered = append(registered, mac)
	}
}

// Macros are the statements that make the macros of every held connection:
// the kernel's words (kernelMacros), classify's rules over joined facts
// (reasonMacros), sql/macros.sql's, then those the analysis packages
// registered.
func Macros() string {
	return kernelMacros() + reasonMacros() + strings.Join(append([]string{common.Macros()}, registered...), ";\n")
}

// Statement is one named statement of a module.
type Statement struct {
	Name, File string
	Doc        string // its header comment, without the name line
	SQL        string
}

// Modules are a package's statements by name, and its macros in the order
// they are made.
type Modules struct {
	statements map[string]Statement
	macros     []string
}

// nameLines finds each statement's header line, "-- name: NAME", in text:
// the start and end of each line and of its name. Read at every start of
// whyslow: a regexp took ~2 ms of it.
func nameLines(text string) [][4]int {
	const prefix = "-- name: "
	var at [][4]int
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		if line := strings.TrimRight(text[start:end], " \t\r"); strings.HasPrefix(line, prefix) && isStatementName(line[len(prefix):]) {
			at = append(at, [4]int{start, end, start + len(prefix), start + len(line)})
		}
		start = end + 1
	}
	return at
}

// isStatementName says whether s is a statement's name: [a-z_0-9]+.
func isStatementName(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return s != ""
}

// LoadModules reads the modules sql/*.sql of fsys (a package's embedded
// files), in name order. Its failures are the program's, found by any test:
// it panics.
func LoadModules(fsys fs.FS) Modules {
	files, err := fs.Glob(fsys, "sql/*.sql")
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("analysis: no SQL modules: %v", err))
	}
	sort.Strings(files)
	m := Modules{statements: map[string]Statement{}}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			panic(err)
		}
		for _, st := range parseModule(f, string(b)) {
			if _, dup := m.statements[st.Name]; dup {
				panic("analysis: SQL statement " + st.Name + " named twice")
			}
			m.statements[st.Name] = st
			if strings.HasPrefix(st.SQL, "CREATE OR REPLACE TEMP MACRO ") {
				m.macros = append(m.macros, st.SQL)
			}
		}
	}
	return m
}

// parseModule cuts a module's text into its statements, each from its name
// line to the next.
func parseModule(file, text string) []Statement {
	var out []Statement
	at := nameLines(text)
	for i, m := range at {
		end := len(text)
		if i+1 < len(at) {
			end = at[i+1][0]
		}
		body := strings.TrimSpace(text[m[1]:end])
		var doc []string
		lines := strings.Split(body, "\n")
		for len(lines) > 0 && strings.HasPrefix(lines[0], "--") {
			doc = append(doc, strings.TrimSpace(strings.TrimPrefix(lines[0], "--")))
			lines = lines[1:]
		}
		out = append(out, Statement{Name: text[m[2]:m[3]], File: file, Doc: strings.Join(doc, "\n"),
			SQL: strings.TrimSuffix(strings.TrimSpace(strings.Join(lines, "\n")), ";")})
	}
	return out
}

// SQL is the text of the named statement.
func (m Modules) SQL(name string) string {
	st, ok := m.statements[name]
	if !ok {
		panic("analysis: no SQL statement " + name)
	}
	return st.SQL
}

// slot is a place in a statement for a condition Go builds: {{where}}.
var slot = regexp.MustCompile(`\{\{([a-z_]+)\}\}`)

// Where is the named statement with its slots filled, in order, by
// conditions a filter built: optional conditions whose values are bound
// (?), never written in. A slot left unfilled is an error DuckDB reports at
// once ({{ is no SQL).
func (m Modules) Where(name string, conds ...string) string {
	i := 0
	return slot.ReplaceAllStringFunc(m.SQL(name), func(s string) string {
		if i == len(conds) {
			return s
		}
		i++
		return "(" + conds[i-1] + ")"
	})
}

// Macros are the statements that make the modules' macros, in order, as one
// string.
func (m Modules) Macros() string { return strings.Join(m.macros, ";\n") }

// Statements are every statement of the modules, for tests that read them
// all.
func (m Modules) Statements() []Statement {
	out := make([]Statement, 0, len(m.statements))
	for _, st := range m.statements {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// param is a parameter a statement binds by name: $pids.
var param = regexp.MustCompile(`\$([a-z_0-9]+)`)

// Undocumented lists what a statement's header does not say: that it has
// none, or a parameter it binds or a slot Go fills that it does not name.
// For each package's test.
func (m Modules) Undocumented() []string {
	var out []string
	for _, st := range m.Statements() {
		if st.Doc == "" {
			out = append(out, st.Name+" ("+st.File+"): no header comment")
		}
		for _, p := range append(param.FindAllString(st.SQL, -1), slot.FindAllString(st.SQL, -1)...) {
			if !strings.Contains(st.Doc, p) {
				out = append(out, st.Name+" ("+st.File+"): "+p+" not in its header")
			}
		}
	}
	return out
}
