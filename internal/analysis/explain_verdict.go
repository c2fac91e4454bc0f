package analysis

import (
	"fmt"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
)

var reasonWords = map[string]string{
	"cpu":            "on CPU",
	"runqueue":       "waiting for a CPU (runnable, not running)",
	"disk-read":      "waiting for disk reads",
	"disk-write":     "waiting for disk writes",
	"dirty-throttle": "throttled for dirtying pages faster than the disk writes them (balance_dirty_pages)",
	"sync":           "inside fsync/sync, waiting for data to reach the disk",
	"network":        "waiting on the network",
	"lock":           "waiting on locks",
	"sleep":          "sleeping (timers)",
	"child":          "waiting for child processes",
	"ipc":            "waiting on pipes or unix sockets",
	"other":          "off CPU for other reasons",
}

// verdict ranks the reasons (idle excluded) and writes the summary sentence.
func (x *Explanation) verdict() {
	all := map[string]float64{"cpu": x.Time.OnCPUS, "runqueue": x.Time.RunqueueS}
	for r, v := range x.Time.OffCPUS {
		all[r] += v
	}
	var busy float64
	for _, v := range all {
		busy += v
	}
	for r, v := range all {
		if v > 0 {
			x.Verdict.Ranked = append(x.Verdict.Ranked, Ranked{Reason: r, S: v, Share: v / max(busy, 1e-9)})
		}
	}
	sort.Slice(x.Verdict.Ranked, func(i, j int) bool { return x.Verdict.Ranked[i].S > x.Verdict.Ranked[j].S })
	if len(x.Verdict.Ranked) == 0 {
		x.Verdict = Verdict{Reason: "unknown", Summary: "nothing was recorded for this process"}
		return
	}
	top := x.Verdict.Ranked[0]
	x.Verdict.Reason, x.Verdict.Share = top.Reason, top.Share
	head := fmt.Sprintf("%s of %s %s", format.Pct(top.Share), format.Seconds(busy), reasonWords[top.Reason])
	if top.Share < 0.5 {
		var parts []string
		for i, r := range x.Verdict.Ranked {
			if i == 3 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s", r.Reason, format.Pct(r.Share)))
		}
		x.Verdict.Summary = "no single reason dominates: " + strings.Join(parts, ", ")
		return
	}
	if detail := x.detail(top.Reason); detail != "" {
		head += ": " + detail
	}
	x.Verdict.Summary = head
}

// detail names who and what for the top reason.
func (x *Explanation) detail(reason string) string {
	var th *ThreadTime
	for i := range x.Threads {
		t := &x.Threads[i]
		v := t.ByReason[reason]
		if reason == "cpu" {
			v = t.OnCPUS
		}
		if th == nil || v > th.ByReason[reason] && reason != "cpu" || reason == "cpu" && v > th.OnCPUS {
			th = t
		}
	}
	who := ""
	if th != nil {
		kind := "thread"
		if th.TID == th.PID {
			kind = "main thread"
		}
		who = fmt.Sprintf("%s %s (tid %d)", kind, format.Safe(th.Comm), th.TID)
	}
	switch event.Reason(reason) {
	case event.ReasonDiskWrite, event.ReasonDirtyThrottle, event.ReasonSync:
		s := who
		if th != nil && th.TopFile != "" && (len(x.FileGroups) == 0 || pathPattern(th.TopFile) != x.FileGroups[0].Pattern) {
			// The bytes go with the file they went to; the thread's total apart.
			if th.TopFileWriteBytes > 0 {
				s += " wrote " + format.Bytes(th.TopFileWriteBytes)
			}
			s += " to " + format.Safe(th.TopFile)
			if th.WriteBytes > th.TopFileWriteBytes && th.TopFileWriteBytes > 0 {
				s += fmt.Sprintf(" (%s written in all)", format.Bytes(th.WriteBytes))
			}
		} else if len(x.FileGroups) > 0 {
			g := x.FileGroups[0]
			if g.WriteBytes > 0 {
				s += " wrote " + format.Bytes(g.WriteBytes)
			}
			s += fmt.Sprintf(" to %d files %s", g.Files, format.Safe(g.Pattern))
			if g.Deleted > 0 {
				s += fmt.Sprintf(" (%d deleted before exit)", g.Deleted)
			}
		} else if len(x.Files) > 0 {
			if x.Files[0].WriteBytes > 0 {
				s += " wrote " + format.Bytes(x.Files[0].WriteBytes)
			}
			s += " to " + format.Safe(x.Files[0].Path)
		}
		for _, b := range x.Blame {
			if b.Activity != "whyslow" && b.Share >= 0.25 {
				s += "; other processes' part: " + b.Summary
				break
			}
		}
		return s
	case event.ReasonDiskRead:
		s := who
		if th != nil && th.ReadBytes > 0 {
			s += " read " + format.Bytes(th.ReadBytes)
		}
		if th != nil && th.TopFile != "" {
			s += ", most waited on " + format.Safe(th.TopFile)
			if th.TopFileReadBytes > 0 && th.TopFileReadBytes < th.ReadBytes {
				s += fmt.Sprintf(" (%s of it)", format.Bytes(th.TopFileReadBytes))
			}
		}
		return s
	case event.ReasonNetwork:
		if len(x.Network) > 0 {
			p := x.Network[0]
			return fmt.Sprintf("%s waited on %s (%s in, %s out)", who, format.Safe(p.Peer), format.Bytes(p.BytesIn), format.Bytes(p.BytesOut))
		}
		return who
	case event.ReasonCPU:
		if th != nil {
			return fmt.Sprintf("%s ran %s", who, format.Seconds(th.OnCPUS))
		}
	}
	return who
}
