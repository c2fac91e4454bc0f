package critpath

import (
	"embed"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// The SQL the walk reads (sql/critical_path.sql; source.LoadModules says
// how a module is written). It uses the macros every analysis may use.

//go:embed sql/*.sql
var moduleFiles embed.FS

var modules = source.LoadModules(moduleFiles)

// sqlOf is the text of the named statement.
func sqlOf(name string) string { return modules.SQL(name) }
