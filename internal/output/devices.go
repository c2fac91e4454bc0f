package output

import (
	"fmt"
	"io"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/format"
)

// iostatCols are iostat -x's columns, as its users read them: rates per
// second of the target's window, MB as iostat's (MiB), %util the part of it
// with a request in flight.
var iostatCols = []Column{{Title: "as iostat -x"}, {Title: "r/s", Right: true}, {Title: "w/s", Right: true},
	{Title: "rMB/s", Right: true}, {Title: "wMB/s", Right: true}, {Title: "r_await", Right: true},
	{Title: "w_await", Right: true}, {Title: "aqu-sz", Right: true}, {Title: "%util", Right: true}}

// writeIostat writes each device's iostat row, the target's own row under
// it, then how busy it was while the target waited on storage and what it
// can do (its baseline).
func writeIostat(w io.Writer, devs []explain.DeviceUse) {
	t := Table{Cols: iostatCols}
	for _, d := range devs {
		t.Row(append([]any{d.Name}, iostatCells(d.Load)...)...)
		if d.TargetBytes > 0 || d.TargetLoad.Reads+d.TargetLoad.Writes > 0 {
			t.Row(append([]any{"  by target"}, iostatCells(d.TargetLoad)...)...)
		}
	}
	fmt.Fprintln(w)
	t.Write(w)
	for _, d := range devs {
		name := format.Safe(d.Name)
		if ws := d.Waits; ws != nil && d.TargetBytes > 0 {
			line := fmt.Sprintf("%s while the target waited on storage (%s): %s busy", name, format.Seconds(ws.WaitS), format.Pct(ws.Util))
			if ws.ReadBPS > 0 {
				line += fmt.Sprintf(", %s/s read", format.Bytes(uint64(ws.ReadBPS)))
			}
			if ws.WriteBPS > 0 {
				line += fmt.Sprintf(", %s/s written", format.Bytes(uint64(ws.WriteBPS)))
			}
			for i, l := range wrap(line+fmt.Sprintf(", aqu-sz %.2f", ws.AquSz), 78) {
				if i > 0 {
					l = "  " + l
				}
				fmt.Fprintln(w, l)
			}
			if d.Baseline == nil && d.ThrottleReadBPS == 0 && d.ThrottleWriteBPS == 0 { // a throttle is the ceiling
				fmt.Fprintf(w, "%s: no baseline (whyslow baseline %s measures what it can do)\n", name, name)
			}
		}
		if b := d.Baseline; b != nil {
			line := fmt.Sprintf("%s: baseline %s/s sequential read", name, format.Bytes(b.ReadBPS))
			if b.WriteBPS > 0 {
				line += fmt.Sprintf(", %s/s sequential write", format.Bytes(b.WriteBPS))
			}
			fmt.Fprintln(w, line)
		}
	}
}

// iostatCells are a load's cells in iostatCols' order.
func iostatCells(l explain.DeviceLoad) []any {
	return []any{fmt.Sprintf("%.1f", l.RPerS), fmt.Sprintf("%.1f", l.WPerS),
		fmt.Sprintf("%.2f", l.ReadBPS/(1<<20)), fmt.Sprintf("%.2f", l.WriteBPS/(1<<20)),
		fmt.Sprintf("%.2f", l.RAwaitMS), fmt.Sprintf("%.2f", l.WAwaitMS),
		fmt.Sprintf("%.2f", l.AquSz), fmt.Sprintf("%.1f", l.Util*100)}
}
