package analysis

import (
	"slices"
	"strings"

	"github.com/whyslow/whyslow/internal/event"
)

// SQL fragments more than one analysis uses, written once here.

// direction tells reads from writes among calls that move bytes: a class,
// and the net calls that go the same way (a recv is a read, a send a write).
// sendfile, splice and copy_file_range are neither: the file a row names is
// the one they read from, the bytes go to another.
type direction struct {
	class string
	net   []string
}

var (
	reads  = direction{"read", []string{"recvfrom", "recvmsg"}}
	writes = direction{"write", []string{"sendto", "sendmsg"}}
)

// sql is the direction in SQL, for rows with class and name: the is_read and
// is_write macros (kernelMacros).
func (d direction) sql() string {
	return "(class = '" + d.class + "' OR name IN ('" + strings.Join(d.net, "','") + "'))"
}

// has reports whether a call of class named name goes this way.
func (d direction) has(class, name string) bool {
	return class == d.class || slices.Contains(d.net, name)
}

// byteSyscalls are the syscalls whose return value is bytes moved (the io
// view's bytes column), for `name IN (...)`: not accept or connect.
var byteSyscalls = event.ByteSyscallsSQL()
