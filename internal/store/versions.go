package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// readsToo are the earlier versions whyslow also reads, each as a recording
// of this version (additions says how).
var readsToo = []int{3, 4, 5, 6, 7}

// ReadVersions are the schema versions whyslow reads, oldest first: readsToo
// and SchemaVersion.
func ReadVersions() []int { return append(slices.Clone(readsToo), SchemaVersion) }

// A recording of an earlier version is read as one of this version, in one
// place: every connection a reader makes gets temporary views, which DuckDB
// finds before the recording's own tables and views (as it finds the
// derived wait_reasons): a table the recording lacks, empty, as in a
// recording that saw none of its events; a table that lacks columns, its
// rows with them, each row's value what it was before the column existed;
// a table an older version stored in another shape, made from that; and
// this version's views over those, in place of the recording's older ones.
// Every reader (the analyses, output, exports, `whyslow sql`) then meets
// one shape, and none asks which version it reads. The file is not changed:
// it is opened read-only. Views, not temporary tables: an analysis drops
// the temporary tables it made when it is done (source.Hold), and keeps
// every view.

// addition is what a version added that this one's readers read.
type addition struct {
	version int
	// tables it added: an older recording has none of their rows.
	tables []string
	// columns it added to a table, with the value an older row has.
	columns []addedColumn
	// packed is a table it made a view of the same rows and columns, over
	// tables it added: an older recording's table is read as it is, and
	// those tables are made from it.
	packed *packing
}

// addedColumn is a column a version added to a table: value is the SQL of
// an older row's, over the table's other columns (r).
type addedColumn struct{ table, column, value string }

// packing is a view that was a table, and the tables under it.
type packing struct {
	view   string
	tables []rebuilt
}

// rebuilt is a table made from an older recording's rows: those of from
// (as r), each column's value from values, or else r's column of its name.
type rebuilt struct {
	table  string
	values map[string]string
	from   string
}

// additions lists each version's additions since the oldest version read
// (docs/trace-format.md, "Versions", says them for users). A new version
// adds its entry, and readsToo the version before it: TestOlderVersionsRead
// checks that an older recording reads as the recording it was made from.
var additions = []addition{
	// syscall_raw's rows packed into syscall_packed, as one STRUCT column,
	// and syscall_second_file, the second file of the calls that have one.
	{version: 4, packed: &packing{view: "syscall_raw", tables: []rebuilt{
		{table: "syscall_packed", values: map[string]string{"c": "{" + syscallPacked("r") + "}"}, from: "syscall_raw"},
		{table: "syscall_second_file", from: "(SELECT * FROM syscall_raw WHERE fd2 >= 0 OR dev2 <> 0 OR ino2 <> 0 OR gen2 <> 0)"},
	}}},
	// Runs of short waits summed in the kernel, and cgroups' limits.
	{version: 5, tables: []string{"cpu_quotas", "memory_limits", "io_limits"}, columns: []addedColumn{
		{"offcpu_raw", "waits", "1"}, // a row was one wait
		{"offcpu_raw", "run_start", "r.start_ts"},
		{"offcpu_raw", "max_ns", "r.off_ns"},
		{"offcpu_raw", "quota", "false"}, // never held off the CPU by its cgroup's quota
		{"existing", "cgroup", "''"},     // not read: as a thread whose cgroup /proc did not give
	}},
	// The sampled capture's looks at threads in /proc.
	{version: 6, tables: []string{"proc_samples_raw"}},
	// The service a process named itself (OpenTelemetry's environment).
	{version: 7, columns: []addedColumn{
		{"execs", "service", "''"}, // not read: as a process that named none
		{"existing", "service", "''"},
	}},
	// The sampled capture's looks: a wait's timeout, and its memory
	// cgroup at its limit.
	{version: 8, columns: []addedColumn{
		{"proc_samples_raw", "timeout_at", "0"},  // not read: as a wait without a timeout
		{"proc_samples_raw", "reclaim", "false"}, // not read: as a cgroup not at its limit
	}},
}

// syscallPacked is syscall_packed's fields as a STRUCT literal's, each the
// column of the same name of r.
func syscallPacked(r string) string {
	var f []string
	for _, c := range splitColumns(syscallPackedFields) {
		name, _, _ := strings.Cut(c, " ")
		f = append(f, fmt.Sprintf("'%s': %s.%s", name, r, name))
	}
	return strings.Join(f, ", ")
}

// older is the SQL that makes a recording of an earlier version read as
// one of this version on a connection: before, its tables (the derived
// tables are made from them); after, this version's views (made over the
// derived tables). Both "" for this version.
type older struct {
	version       int
	before, after string
}

// failed is err, met making a recording's older tables and views: a
// recording of its version whose tables are not what that version's were.
func (o older) failed(err error) error {
	return fmt.Errorf("reading a version %d recording as one of version %d: %w", o.version, SchemaVersion, err)
}

// olderOf is a recording's older, from its version and the name DuckDB
// gave its database (a view that adds columns reads the recording's own
// table of the same name). A version whyslow does not read has none: Open
// refuses it.
func olderOf(query queryFunc) (older, error) {
	rows, err := query("SELECT value FROM meta WHERE key = 'schema_version'")
	if err != nil {
		return older{}, err
	}
	var version int
	if len(rows) > 0 {
		s, _ := rows[0][0].(string)
		version, _ = strconv.Atoi(s)
	}
	if !slices.Contains(readsToo, version) {
		return older{}, nil
	}
	rows, err = query("SELECT current_database()")
	if err != nil || len(rows) == 0 {
		return older{}, fmt.Errorf("naming the recording's database: %v", err)
	}
	db, _ := rows[0][0].(string)
	return olderSQL(version, db), nil
}

// olderSQL makes version's older; db is the recording's database.
func olderSQL(version int, db string) older {
	var before, after strings.Builder
	view := func(table string, values map[string]string, from string) {
		fmt.Fprintf(&before, "CREATE OR REPLACE TEMP VIEW %s AS %s;\n", table, shaped(table, values, from))
	}
	stored := `"` + strings.ReplaceAll(db, `"`, `""`) + `".main.`
	kept := map[string]bool{}
	added := map[string]map[string]string{} // table, column: an older row's value
	empty := map[string]bool{}              // tables the recording lacks: made empty, in this version's shape
	for _, a := range additions {
		if a.version <= version {
			continue
		}
		for _, t := range a.tables {
			none := map[string]string{}
			for _, c := range splitColumns(columnsOf(t)) {
				name, _, _ := strings.Cut(c, " ")
				none[name] = "NULL"
			}
			view(t, none, "(SELECT 1 WHERE false)")
			empty[t] = true
		}
		for _, c := range a.columns {
			if added[c.table] == nil {
				added[c.table] = map[string]string{}
			}
			added[c.table][c.column] = c.value
		}
		if p := a.packed; p != nil {
			kept[p.view] = true
			for _, t := range p.tables {
				view(t.table, t.values, t.from)
			}
		}
	}
	for _, t := range tables {
		if values := added[t.name]; values != nil && !empty[t.name] {
			view(t.name, values, stored+t.name)
		}
	}
	for _, v := range views {
		if !kept[viewName(v)] {
			after.WriteString(strings.Replace(v, "CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1) + ";\n")
		}
	}
	return older{version: version, before: before.String(), after: after.String()}
}

// shaped is the query of this version's table from rows of another shape
// (from, as r): each column cast to its type, its value from values, or
// else r's column of the same name.
func shaped(table string, values map[string]string, from string) string {
	var list []string
	for _, c := range splitColumns(columnsOf(table)) {
		name, typ, _ := strings.Cut(c, " ")
		v, ok := values[name]
		if !ok {
			v = `r."` + name + `"`
		}
		list = append(list, fmt.Sprintf(`CAST(%s AS %s) AS "%s"`, v, typ, name))
	}
	return fmt.Sprintf("SELECT %s FROM %s r", strings.Join(list, ", "), from)
}

// columnsOf is a table's columns in this version, as CREATE TABLE takes them.
func columnsOf(table string) string {
	for _, t := range tables {
		if t.name == table {
			return t.columns
		}
	}
	panic("store: no table " + table) // additions names a table schema.go lacks
}

// splitColumns splits a table's columns at the commas between them, not
// those inside a type (STRUCT(a INTEGER, b INTEGER)).
func splitColumns(columns string) []string {
	var out []string
	depth, from := 0, 0
	for i, c := range columns {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(columns[from:i]))
				from = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(columns[from:]))
}

// viewName is the name a view's statement makes.
func viewName(stmt string) string {
	_, rest, _ := strings.Cut(stmt, "VIEW ")
	name, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	return name
}
