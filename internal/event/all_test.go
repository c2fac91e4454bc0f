package event

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"testing"
)

// Every struct of this package that embeds Header is an event, and All lists
// it: a kind added without it would fail where All is used (watch's
// incidents), not here.
func TestAllListsEveryEvent(t *testing.T) {
	listed := map[string]bool{}
	for _, e := range All() {
		listed[reflect.TypeOf(e).Elem().Name()] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := 0
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fl := range st.Fields.List {
				if id, ok := fl.Type.(*ast.Ident); ok && len(fl.Names) == 0 && id.Name == "Header" {
					found++
					if !listed[ts.Name.Name] {
						t.Errorf("%s embeds Header but All does not list it", ts.Name.Name)
					}
				}
			}
			return false
		})
	}
	if found != len(listed) {
		t.Errorf("%d event types found in the sources, %d listed", found, len(listed))
	}
}
