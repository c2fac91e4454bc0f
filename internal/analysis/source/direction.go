package source

import (
	"slices"
	"strings"
)

// Direction tells reads from writes among calls that move bytes: a class,
// and the net calls that go the same way (a recv is a read, a send a write).
// sendfile, splice and copy_file_range are neither: the file a row names is
// the one they read from, the bytes go to another. The analyses' SQL asks
// it with the is_read and is_write macros (kernelMacros), requests in Go
// (Has).
type Direction struct {
	Class string
	Net   []string
}

var (
	Reads  = Direction{"read", []string{"recvfrom", "recvmsg"}}
	Writes = Direction{"write", []string{"sendto", "sendmsg"}}
)

// sql is the direction in SQL, for rows with class and name.
func (d Direction) sql() string {
	return "(class = '" + d.Class + "' OR name IN ('" + strings.Join(d.Net, "','") + "'))"
}

// Has reports whether a call of class named name goes this way.
func (d Direction) Has(class, name string) bool {
	return class == d.Class || slices.Contains(d.Net, name)
}
