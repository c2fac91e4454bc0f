// Package export writes a recording in other tools' formats: folded stacks
// (flamegraph.pl, speedscope, inferno), Parquet (Spark, Trino, DuckDB) and
// Perfetto traces (ui.perfetto.dev, trace processor).
package export

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/format"
)

// FoldedOptions shape folded stacks.
type FoldedOptions struct {
	// ByReason puts the off-CPU reason ([disk-write]) between the thread
	// and its kernel stack.
	ByReason bool
}

// Folded writes stacks as Brendan Gregg's folded format: one line per
// distinct stack, frames root first separated by ';', then a space and the
// time in microseconds. The root frame is the process ("comm (pid)"), then
// the thread ("comm (tid)"), then the kernel frames, outermost first.
func Folded(w io.Writer, stacks []reports.Stack, o FoldedOptions) error {
	sums := map[string]uint64{}
	for _, st := range stacks {
		sums[foldedLine(st, o)] += st.NS
	}
	lines := make([]string, 0, len(sums))
	for l := range sums {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		if us := (sums[l] + 500) / 1000; us > 0 {
			fmt.Fprintf(bw, "%s %d\n", l, us)
		}
	}
	return bw.Flush()
}

func foldedLine(st reports.Stack, o FoldedOptions) string {
	frames := []string{fmt.Sprintf("%s (%d)", frame(st.Process), st.PID), fmt.Sprintf("%s (%d)", frame(st.Thread), st.TID)}
	switch {
	case st.Reason == "cpu":
		frames = append(frames, "[on-cpu]")
	case o.ByReason:
		frames = append(frames, "["+frame(st.Reason)+"]")
	}
	if st.Reason != "cpu" && len(st.Frames) == 0 {
		frames = append(frames, "[no kernel stack]")
	}
	for _, f := range st.Frames {
		frames = append(frames, frame(f))
	}
	return strings.Join(frames, ";")
}

// frame makes a name safe in a folded line and on a terminal: ';' separates
// frames, and a line ends at a newline.
func frame(s string) string {
	if s == "" {
		return "?"
	}
	return strings.ReplaceAll(format.Safe(s), ";", ":")
}
