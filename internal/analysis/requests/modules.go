package requests

import (
	"embed"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/source"
)

// The SQL of the requests (sql/requests.sql; source.LoadModules says how a
// module is written). It reads the target's tables explain makes
// (explain.Source.TargetWaits) with the macros every analysis may use.

//go:embed sql/*.sql
var moduleFiles embed.FS

var modules = source.LoadModules(moduleFiles)

// sqlOf is the text of the named statement.
func sqlOf(name string) string { return modules.SQL(name) }

// recording is a held explain.Source as the requests' steps read it.
type recording struct{ *explain.Source }
