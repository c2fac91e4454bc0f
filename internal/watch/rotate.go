package watch

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// rotate removes the oldest incidents (every file of each) while more than
// keep are kept or they take more than maxDisk bytes; 0 is no limit. The
// incident being written is not yet among them: its name is still partial.
func rotate(dir string, keep int, maxDisk int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type incident struct {
		files []string
		bytes int64
	}
	byName := map[string]*incident{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		base, _, ok := strings.Cut(name, ".")
		if !ok || !isIncidentName(base) {
			continue
		}
		inc := byName[base]
		if inc == nil {
			inc = &incident{}
			byName[base] = inc
		}
		inc.files = append(inc.files, filepath.Join(dir, name))
		if info, err := e.Info(); err == nil {
			inc.bytes += info.Size()
		}
	}
	names := make([]string, 0, len(byName))
	var total int64
	for n, inc := range byName {
		names = append(names, n)
		total += inc.bytes
	}
	sort.Strings(names) // a name begins with its UTC time: oldest first
	for _, n := range names {
		if (keep <= 0 || len(byName) <= keep) && (maxDisk <= 0 || total <= maxDisk) {
			break
		}
		for _, f := range byName[n].files {
			os.Remove(f)
		}
		total -= byName[n].bytes
		delete(byName, n)
	}
}

// isIncidentName: 20261124T214502Z-<kind>.
func isIncidentName(s string) bool {
	if len(s) < 18 || s[8] != 'T' || s[15] != 'Z' || s[16] != '-' {
		return false
	}
	for i, c := range s[:15] {
		if i != 8 && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// RemovePartial removes incidents a watch killed while writing them left
// behind (their recording, its WAL), so that the next starts clean.
func RemovePartial(dir string) {
	m, _ := filepath.Glob(filepath.Join(dir, partialPrefix+"*"))
	for _, p := range m {
		os.RemoveAll(p)
	}
}
