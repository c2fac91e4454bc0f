package source

import (
	"slices"
	"strings"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
)

// reasonMacros are classify's rules over a fact a recording does not keep
// per wait, which the analyses join to it, as SQL: ring_reason(class,
// fkind) is what a wait in io_uring_enter waited on, by its longest
// operation in flight (classify.Input.Ring; explain's target_uring joins
// the operations). Made by asking classify.Reason of every class and file
// kind, so the rule is classify's alone. Fixed words, never input.
func reasonMacros() string {
	ring, ok := event.SyscallNr("io_uring_enter")
	if !ok {
		panic("source: io_uring_enter is not in internal/event's table")
	}
	byReason := map[event.Reason][]string{}
	for _, c := range event.UringClasses() {
		for _, k := range event.FileKinds() {
			r := classify.Reason(classify.Input{State: 'S', Syscall: ring, WakerSyscall: -1,
				Ring: &classify.RingOp{Class: c, Kind: k}})
			byReason[r] = append(byReason[r], "'"+string(c)+"/"+k.String()+"'")
		}
	}
	var b strings.Builder
	b.WriteString("CREATE OR REPLACE TEMP MACRO ring_reason(class, fkind) AS CASE")
	for _, r := range event.Reasons {
		if pairs := byReason[r]; len(pairs) > 0 && r != event.ReasonOther {
			slices.Sort(pairs)
			b.WriteString(" WHEN class || '/' || coalesce(fkind, 'unknown') IN (" + strings.Join(pairs, ", ") + ") THEN '" + string(r) + "'")
		}
	}
	b.WriteString(" ELSE '" + string(event.ReasonOther) + "' END;\n")
	return b.String()
}
