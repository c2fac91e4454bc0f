package explain

import (
	"embed"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// The SQL of the explanations, by subject (sql/*.sql; source.LoadModules
// says how a module is written). Their macros (sql/target.sql) are made on
// every connection an analysis holds (source.RegisterMacros), after the
// ones every analysis may use.

//go:embed sql/*.sql
var moduleFiles embed.FS

var modules = source.LoadModules(moduleFiles)

func init() { source.RegisterMacros(modules) }

// sqlOf is the text of the named statement.
func sqlOf(name string) string { return modules.SQL(name) }

// run executes the named statement on the held connection.
func (s *Source) run(name string, args ...any) error {
	_, err := s.Exec(sqlOf(name), args...)
	return err
}

// sqlWhere is the named statement with its slots filled by conditions
// (source.Modules.Where).
func sqlWhere(name string, conds ...string) string { return modules.Where(name, conds...) }
