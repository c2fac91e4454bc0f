package output

import (
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
)

// deviceWords adds to a storage verdict whether the device was at its
// limit while the target waited: "; loop0 was held at its blkio throttle:
// 8.0 MiB/s written of 8.0 MiB/s (3% busy)", or that it had room: "; vda
// 12% busy at 1.2 MiB/s, aqu-sz 0.10 (no baseline: whyslow baseline vda):
// the wait was in the queue in front of it (dirty-page throttling)".
func deviceWords(v explain.Verdict) string {
	d := v.Device
	if d == nil {
		return ""
	}
	name, rate := format.Safe(d.Name), format.Bytes(uint64(d.BPS))+"/s"
	dir := "read"
	if d.Write {
		dir = "written"
	}
	limit := ceilingWords(d)
	switch {
	case d.Saturated && d.Util >= 0.9 && d.AquSz >= 1.5:
		s := fmt.Sprintf("; %s was %s busy at %s %s", name, format.Pct(d.Util), rate, dir)
		switch {
		case limit == "":
			return s + fmt.Sprintf(", aqu-sz %.2f: at its limit (no baseline to compare: whyslow baseline %s)", d.AquSz, name)
		case d.BPS >= 0.9*float64(d.CeilingBPS):
			return s + ", " + limit
		}
		return s + ", short of " + limit + ": busy with small or scattered requests"
	case d.Saturated:
		return fmt.Sprintf("; %s was held at %s: %s %s (%s busy)", name, limit, rate, dir, format.Pct(d.Util))
	case d.Util >= 0.9:
		// Busy with the waiter's own request, one at a time: %util says
		// little of a device that serves many at once.
		s := fmt.Sprintf("; %s %s busy at %s %s but one request at a time (aqu-sz %.2f): not at its limit", name, format.Pct(d.Util), rate, dir, d.AquSz)
		if limit != "" {
			return s + ", below " + limit
		}
		return s + fmt.Sprintf(" (no baseline: whyslow baseline %s)", name)
	}
	s := fmt.Sprintf("; %s %s busy at %s %s", name, format.Pct(d.Util), rate, dir)
	if limit != "" {
		s += ", below " + limit
	} else {
		s += fmt.Sprintf(", aqu-sz %.2f (no baseline: whyslow baseline %s)", d.AquSz, name)
	}
	if storageReason(v) == event.ReasonDirtyThrottle {
		return s + ": the wait was in the queue in front of it (dirty-page throttling)"
	}
	return s + ": it had room"
}

// ceilingWords: "its blkio throttle (8.0 MiB/s)", "its measured ceiling
// (183.0 MiB/s)", or "" for none.
func ceilingWords(d *explain.DeviceVerdict) string {
	var what string
	switch d.Ceiling {
	case explain.CeilingBlkio:
		what = "its blkio throttle"
	case explain.CeilingCgroup:
		what = "its cgroup's I/O limit"
	case explain.CeilingBaseline:
		what = "its measured ceiling"
	default:
		return ""
	}
	return fmt.Sprintf("%s (%s/s)", what, format.Bytes(d.CeilingBPS))
}

// storageReason is the verdict's largest storage reason.
func storageReason(v explain.Verdict) event.Reason {
	for _, r := range v.Ranked {
		if event.Reason(r.Reason).Disk() {
			return event.Reason(r.Reason)
		}
	}
	return ""
}
