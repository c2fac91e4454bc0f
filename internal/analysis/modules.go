package analysis

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

// The analyses' SQL lives in modules, sql/*.sql, by subject, as Perfetto
// keeps its standard library: each statement under a header line
//
//	-- name: target_offcpu
//
// followed by comment lines that say what it makes, its parameters (bound
// by name, $b, or as lists, $pids: never written into the text), its slots
// for a filter's conditions ({{where}}, sqlWhere) and its columns. The DuckDB macros among them (CREATE OR REPLACE TEMP MACRO) are
// made on every connection an analysis holds (hold), macros.sql's first;
// the other statements are run by name (run, sqlOf) on that connection.

//go:embed sql/*.sql
var moduleFiles embed.FS

// statement is one named statement of a module.
type statement struct {
	name, file string
	doc        string // its header comment, without the name line
	sql        string
}

// modules are every module's statements by name; macros, the macros in
// the order they are made, as one string.
var modules, macros = loadModules(moduleFiles)

var nameLine = regexp.MustCompile(`(?m)^-- name: ([a-z_0-9]+)\s*$`)

func loadModules(fsys fs.FS) (map[string]statement, string) {
	files, err := fs.Glob(fsys, "sql/*.sql")
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("analysis: no SQL modules: %v", err))
	}
	sort.Slice(files, func(i, j int) bool { // macros.sql first: the others' macros use its
		a, b := files[i] != "sql/macros.sql", files[j] != "sql/macros.sql"
		return a != b && !a || a == b && files[i] < files[j]
	})
	out := map[string]statement{}
	var mac []string
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			panic(err)
		}
		text := string(b)
		at := nameLine.FindAllStringSubmatchIndex(text, -1)
		for i, m := range at {
			end := len(text)
			if i+1 < len(at) {
				end = at[i+1][0]
			}
			name := text[m[2]:m[3]]
			body := strings.TrimSpace(text[m[1]:end])
			var doc []string
			lines := strings.Split(body, "\n")
			for len(lines) > 0 && strings.HasPrefix(lines[0], "--") {
				doc = append(doc, strings.TrimSpace(strings.TrimPrefix(lines[0], "--")))
				lines = lines[1:]
			}
			st := statement{name: name, file: f, doc: strings.Join(doc, "\n"),
				sql: strings.TrimSuffix(strings.TrimSpace(strings.Join(lines, "\n")), ";")}
			if _, dup := out[name]; dup {
				panic("analysis: SQL statement " + name + " named twice")
			}
			out[name] = st
			if strings.HasPrefix(st.sql, "CREATE OR REPLACE TEMP MACRO ") {
				mac = append(mac, st.sql)
			}
		}
	}
	return out, strings.Join(mac, ";\n")
}

// sqlOf is the text of the named statement.
func sqlOf(name string) string {
	st, ok := modules[name]
	if !ok {
		panic("analysis: no SQL statement " + name)
	}
	return st.sql
}

// slot is a place in a statement for a condition Go builds: {{where}}.
var slot = regexp.MustCompile(`\{\{([a-z_]+)\}\}`)

// sqlWhere is the named statement with its slots filled, in order, by
// conditions a Filter built (Filter.where): optional conditions whose values
// are bound (?), never written in. A slot left unfilled is an error DuckDB
// reports at once ({{ is no SQL).
func sqlWhere(name string, conds ...string) string {
	i := 0
	return slot.ReplaceAllStringFunc(sqlOf(name), func(m string) string {
		if i == len(conds) {
			return m
		}
		i++
		return "(" + conds[i-1] + ")"
	})
}

// run executes the named statement on the held connection.
func (s *Source) run(name string, args ...any) error {
	_, err := s.exec(sqlOf(name), args...)
	return err
}
