// Package reports holds the reports that stand beside the explanations:
// usage (where time and bytes went, per process and file), stats, freq, top
// and the log of calls (latency.go, log_stream.go), stacks and the
// series of a recording's activity. Each is a function of a
// *source.Source and a source.Filter that returns facts; output words
// them.
package reports

import (
	"embed"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// The reports' SQL, by subject (sql/*.sql; source.LoadModules says how a
// module is written). They define no macros of their own: those every
// analysis may use are made by source.Source.Hold.

//go:embed sql/*.sql
var moduleFiles embed.FS

var modules = source.LoadModules(moduleFiles)

// sqlOf is the text of the named statement.
func sqlOf(name string) string { return modules.SQL(name) }

// sqlWhere is the named statement with its slots filled by conditions
// (where, source.Modules.Where).
func sqlWhere(name string, conds ...string) string { return modules.Where(name, conds...) }
