package source

import (
	"fmt"
	"strings"

	"github.com/whyslow/whyslow/internal/event"
)

// kernelMacros are the kernel's numbers and syscall sets as the analyses'
// SQL spells them, made from their one definition in internal/event on
// every held connection before the modules' macros: page_size() for the
// dirtied and writeback tables' page counts, block_op('write') for
// block_raw's op codes (the named disk view costs a join the sums on
// block_raw avoid), is_poll(syscall) for the calls that wait on many fds at
// once (event.PollSyscalls), is_read(class, name) and is_write(class, name)
// for the calls' directions (event.Reads, event.Writes: requests and
// watch ask the same in Go, the kernel's request trigger in C).
// Fixed words, never input.
func kernelMacros() string {
	var ops []string
	for _, op := range event.BlockOps() {
		ops = append(ops, fmt.Sprintf("WHEN '%s' THEN %d", op, op))
	}
	return fmt.Sprintf("CREATE OR REPLACE TEMP MACRO page_size() AS %d;\n", event.PageSize) +
		"CREATE OR REPLACE TEMP MACRO block_op(name) AS CASE name " + strings.Join(ops, " ") + " END;\n" +
		"CREATE OR REPLACE TEMP MACRO is_poll(syscall) AS syscall IN ('" + strings.Join(event.PollSyscalls, "', '") + "');\n" +
		"CREATE OR REPLACE TEMP MACRO is_read(class, name) AS " + directionSQL(event.Reads) + ";\n" +
		"CREATE OR REPLACE TEMP MACRO is_write(class, name) AS " + directionSQL(event.Writes) + ";\n"
}

// directionSQL is a direction in SQL, for rows with class and name.
func directionSQL(d event.Direction) string {
	return "(class = '" + d.Class.String() + "' OR name IN ('" + strings.Join(d.Net, "','") + "'))"
}
