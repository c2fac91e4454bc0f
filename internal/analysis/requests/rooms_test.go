package requests

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rooms are internal/analysis's packages in the order the data flows: each
// may import only those before it (docs/architecture.md).
var rooms = []string{"source", "protocol", "protocol/protocoltest", "reports", "critpath", "explain", "requests"}

// TestRoomsImportDownward: no room imports one listed after it, or a
// package of internal/analysis that is no room.
func TestRoomsImportDownward(t *testing.T) {
	const prefix = "github.com/whyslow/whyslow/internal/analysis"
	for i, room := range rooms {
		files, err := filepath.Glob(filepath.Join("..", room, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("room %s: no Go files (%v)", room, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path != prefix && !strings.HasPrefix(path, prefix+"/") {
					continue
				}
				to := slices.Index(rooms, strings.TrimPrefix(strings.TrimPrefix(path, prefix), "/"))
				if to < 0 || to >= i {
					t.Errorf("%s imports %s: a room imports only the rooms before it (%v)", f, path, rooms)
				}
			}
		}
	}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !slices.Contains(rooms, e.Name()) {
			t.Errorf("internal/analysis/%s is no room in the list: place it in the order", e.Name())
		}
	}
}
