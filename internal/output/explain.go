package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/whyslow/whyslow/internal/format"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/event"
)

// Explanation prints where a target's time went, at most 80 columns wide.
func Explanation(w io.Writer, x *explain.Explanation) {
	writeVerdict(w, x)
	writeWallTime(w, x)
	writeThreads(w, x.Threads)
	writeFileGroups(w, x.FileGroups)
	writeFiles(w, x.Files)
	writeDevices(w, x.Devices)
	writeNetwork(w, x.Network)
	writeAfterExit(w, x.AfterExit)
	writeBlame(w, x)
	if x.LostEvents > 0 {
		_, sources := LostWords(x.Lost)
		fmt.Fprintf(w, "\nwarning: %d events were lost (%s); totals may be low\n", x.LostEvents, sources)
	}
}

// writeVerdict prints the head of the explanation: the target, its verdict
// in a sentence, the path that led to it and how much of the time the
// recording covers, so the answer comes before the evidence.
func writeVerdict(w io.Writer, x *explain.Explanation) {
	fmt.Fprintf(w, "\nwhyslow: %s (pid %d)", format.Safe(commandLine(x.Target.Command, 44)), x.Target.PID)
	if x.Target.ExitCode != nil {
		fmt.Fprintf(w, ", exit %d", *x.Target.ExitCode)
	}
	fmt.Fprintf(w, ", wall %s\n", format.Seconds(x.WallS))
	fmt.Fprintf(w, "\nverdict: %s\n", strings.ToUpper(x.Verdict.Reason))
	for _, line := range wrap(verdictSentence(x.Verdict), 76) {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if chain := pathChain(x); chain != "" {
		for i, line := range wrap("path: "+chain, 76) {
			if i > 0 {
				line = "  " + line
			}
			fmt.Fprintf(w, "  %s\n", line)
		}
	}

	if note := coverageNote(x); note != "" {
		for _, line := range wrap(note, 76) {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

// writeWallTime prints the ranked reasons behind the verdict, with bars
// scaled to the largest, and the CPU times the kernel reported beside them.
func writeWallTime(w io.Writer, x *explain.Explanation) {
	if x.Verdict.Basis == "threads" {
		Heading(w, "Where the time went (all threads: the first one mostly waited for work)")
	} else {
		Heading(w, "Where the wall time went (critical path)")
	}
	maxS := 0.0
	for _, r := range x.Verdict.Ranked {
		maxS = max(maxS, r.S)
	}
	t := Table{Cols: []Column{{Title: "reason"}, {Title: "time", Right: true}, {Title: "share", Right: true}, {Title: ""}}}
	for _, r := range x.Verdict.Ranked {
		t.Row(r.Reason, format.Seconds(r.S), format.Pct(r.Share), Bar(r.S, maxS, 40))
	}
	if x.Time.UserS != nil {
		t.Row("", "", "", fmt.Sprintf("cpu: user %s, system %s", format.Seconds(*x.Time.UserS), format.Seconds(*x.Time.SystemS)))
	}
	t.Write(w)
	if all := allThreads(x); all != "" {
		for _, line := range wrap("all threads, summed: "+all, 78) {
			fmt.Fprintln(w, line)
		}
	}
}

// writeThreads prints the target's first 8 threads.
func writeThreads(w io.Writer, threads []explain.ThreadTime) {
	if len(threads) == 0 {
		return
	}
	Heading(w, "Threads")
	t := Table{Cols: []Column{{Title: "tid", Right: true}, {Title: "comm", Max: 16}, {Title: "on-cpu", Right: true},
		{Title: "off-cpu", Right: true}, {Title: "read", Right: true}, {Title: "written", Right: true}, {Title: "mostly"}}}
	// The cgroup (a container, a unit) when any shown thread is in one
	// other than the root: where a limit could have come from.
	cgroups := false
	for i, th := range threads {
		if i < 8 && th.Cgroup != "" && th.Cgroup != "/" {
			cgroups = true
		}
	}
	if cgroups {
		t.Cols = append(t.Cols, Column{Title: "cgroup", Max: 32})
	}
	for i, th := range threads {
		if i == 8 {
			break
		}
		cells := []any{th.TID, th.Comm, format.Seconds(th.OnCPUS), format.Seconds(th.OffCPUS), format.Bytes(th.ReadBytes), format.Bytes(th.WriteBytes), mostly(th)}
		if cgroups {
			cells = append(cells, th.CgroupName)
		}
		t.Row(cells...)
	}
	t.Write(w)
}

// writeFileGroups prints the first 5 groups of files created or removed in
// bulk, a sentence each and what the group read and wrote.
func writeFileGroups(w io.Writer, groups []explain.FileGroup) {
	if len(groups) == 0 {
		return
	}
	Heading(w, "Files created or removed in bulk")
	for i, g := range groups {
		if i == 5 {
			break
		}
		for j, line := range wrap(groupSentence(g), 78) {
			if j > 0 {
				line = "  " + line
			}
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "  read %s, written %s\n", format.Bytes(g.ReadBytes), format.Bytes(g.WriteBytes))
	}
}

// writeFiles prints the first 8 files, the longest waited on first.
func writeFiles(w io.Writer, files []explain.FileUse) {
	if len(files) == 0 {
		return
	}
	Heading(w, "Files (by time waited)")
	t := Table{Cols: []Column{{Title: "waited", Right: true}, {Title: "read", Right: true}, {Title: "written", Right: true},
		{Title: "ops", Right: true}, {Title: "path", Max: 40}}}
	for i, f := range files {
		if i == 8 {
			break
		}
		t.Row(format.Seconds(f.WaitS), format.Bytes(f.ReadBytes), format.Bytes(f.WriteBytes), f.Ops, f.Path)
	}
	t.Write(w)
}

// writeDevices prints the block devices' table, as iostat would, and under
// it what the table cannot show: stacked devices, discards and throttles.
func writeDevices(w io.Writer, devices []explain.DeviceUse) {
	if len(devices) == 0 {
		return
	}
	Heading(w, "Devices (all processes, while the target ran)")
	t := Table{Cols: []Column{{Title: "device"}, {Title: "read", Right: true}, {Title: "written", Right: true},
		{Title: "requests", Right: true}, {Title: "await", Right: true}, {Title: "in queue", Right: true}, {Title: "by target", Right: true}}}
	for _, d := range devices {
		t.Row(d.Name, format.Bytes(d.ReadBytes), format.Bytes(d.WriteBytes), d.Requests, fmt.Sprintf("%.1f ms", d.AwaitMS),
			fmt.Sprintf("%.1f ms", d.QueueMS), format.Bytes(d.TargetBytes))
	}
	t.Write(w)
	writeIostat(w, devices)
	for _, d := range devices {
		writeDeviceNotes(w, d)
	}
}

// writeDeviceNotes prints one device's lines under the table: the bytes it
// carries for a device stacked on it, its discards, and its blkio throttle
// with the time the throttle held the target (which await does not count).
func writeDeviceNotes(w io.Writer, d explain.DeviceUse) {
	if d.StackedBytes > 0 {
		fmt.Fprintf(w, "%s: %s of it carries a device stacked on it (a loop file, a dm member)\n",
			format.Safe(d.Name), format.Bytes(d.StackedBytes))
	}
	if d.DiscardBytes > 0 || d.ZeroedBytes > 0 {
		fmt.Fprintf(w, "%s: also discarded %s, zeroed %s\n", format.Safe(d.Name), format.Bytes(d.DiscardBytes), format.Bytes(d.ZeroedBytes))
	}
	if d.ThrottleReadBPS > 0 || d.ThrottleWriteBPS > 0 {
		var lim []string
		if d.ThrottleReadBPS > 0 {
			lim = append(lim, format.Bytes(d.ThrottleReadBPS)+"/s read")
		}
		if d.ThrottleWriteBPS > 0 {
			lim = append(lim, format.Bytes(d.ThrottleWriteBPS)+"/s write")
		}
		line := fmt.Sprintf("%s: blkio throttle %s", format.Safe(d.Name), strings.Join(lim, ", "))
		if d.ThrottledS > 0 {
			line += fmt.Sprintf("; it held the target's I/O %s before the device saw it (not in await)", format.Seconds(d.ThrottledS))
		}
		for i, l := range wrap(line, 78) {
			if i > 0 {
				l = "  " + l
			}
			fmt.Fprintln(w, l)
		}
	}
}

// writeNetwork prints the first 8 peers; bytes the recording did not see
// (PeerUse.BytesKnown) are said to be unseen, never "0 B".
func writeNetwork(w io.Writer, peers []explain.PeerUse) {
	if len(peers) == 0 {
		return
	}
	Heading(w, "Network peers")
	t := Table{Cols: []Column{{Title: "peer", Max: 40}, {Title: "in", Right: true}, {Title: "out", Right: true}, {Title: "in syscalls", Right: true}}}
	for i, p := range peers {
		if i == 8 {
			break
		}
		in, out := format.Bytes(p.BytesIn), format.Bytes(p.BytesOut)
		if !p.BytesKnown {
			in, out = "not seen", "not seen"
		}
		t.Row(p.Peer, in, out, format.Seconds(p.WaitS))
	}
	t.Write(w)
}

// writeAfterExit prints what the kernel still wrote for the target once it
// exited, and what was dirty system-wide, when it wrote any or more than
// 1 MiB was dirty: a program can end before its data is on disk.
func writeAfterExit(w io.Writer, a explain.AfterExit) {
	if a.WrittenBytes == 0 && a.DirtyAtExitBytes <= 1<<20 {
		return
	}
	Heading(w, "After exit")
	fmt.Fprintf(w, "dirty or under writeback system-wide at exit: %s\n", format.Bytes(a.DirtyAtExitBytes))
	if a.WrittenBytes > 0 {
		fmt.Fprintf(w, "the kernel was still writing the target's data: %s over %s after exit\n", format.Bytes(a.WrittenBytes), format.Seconds(a.WritingS))
		for _, f := range a.Files {
			fmt.Fprintf(w, "  %s\n", format.Safe(TrimLeft(f, 76)))
		}
	}
}

// writeBlame prints the first 5 other processes that cost the target time,
// a sentence each after its share, and how many more the JSON holds or
// were left out for a share too small to name.
func writeBlame(w io.Writer, x *explain.Explanation) {
	if len(x.Blame) > 0 {
		Heading(w, "Who else")
		for i, b := range x.Blame {
			if i == 5 {
				break
			}
			for j, line := range wrap(blameSentence(b), 71) {
				lead := "       "
				if j == 0 {
					lead = fmt.Sprintf("%5s  ", format.Pct(b.Share))
				}
				fmt.Fprintln(w, lead+line)
			}
		}
	}
	if n := len(x.Blame) - 5; n > 0 {
		fmt.Fprintf(w, "  (%d more in the JSON)\n", n)
	}
	if x.BlameOmitted > 0 {
		fmt.Fprintf(w, "  (%d more under %s each, left out)\n", x.BlameOmitted, format.Pct(explain.MinBlameShare))
	}
}

func mostly(th explain.ThreadTime) string {
	best, bv := "cpu", th.OnCPUS
	for r, v := range th.ByReason {
		if v > bv {
			best, bv = r, v
		}
	}
	if th.IdleS > bv {
		return string(event.ReasonIdle)
	}
	return best
}

// wrap breaks text at spaces into lines of at most n runes.
func wrap(s string, n int) []string {
	var lines []string
	var cur []string
	length := 0
	for _, word := range unitWords(strings.Fields(s)) {
		if len([]rune(word)) > n {
			word = TrimLeft(word, n) // a path longer than a line keeps its end
		}
		if length+len([]rune(word))+len(cur) > n && len(cur) > 0 {
			lines = append(lines, strings.Join(cur, " "))
			cur, length = nil, 0
		}
		cur = append(cur, word)
		length += len([]rune(word))
	}
	if len(cur) > 0 {
		lines = append(lines, strings.Join(cur, " "))
	}
	return lines
}

// unitWords keeps a number with its unit ("294 B", "1.27 s") as one word.
func unitWords(fields []string) []string {
	units := map[string]bool{"B": true, "KiB": true, "MiB": true, "GiB": true, "TiB": true, "ns": true, "us": true, "ms": true, "s": true}
	var out []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if i+1 < len(fields) && units[strings.TrimRight(fields[i+1], ",;:)")] && f != "" && (f[0] >= '0' && f[0] <= '9') {
			f += " " + fields[i+1]
			i++
		}
		out = append(out, f)
	}
	return out
}

// commandLine shows a command as a person would type it: the program's base
// name and its arguments, cut at the end when long.
func commandLine(cmd string, n int) string {
	name, args, _ := strings.Cut(cmd, " ")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	s := strings.TrimSpace(name + " " + args)
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// pathChain words the hand-offs that lead to the verdict's longest stretch:
// "sh (tid 1) waited on dd (tid 2) to exit ← dd (tid 2): disk-read on /x".
func pathChain(x *explain.Explanation) string {
	var longest *explain.PathSegment
	for i := range x.Path.Segments {
		s := &x.Path.Segments[i]
		if s.Reason == x.Verdict.Reason && (longest == nil || s.DurS > longest.DurS) {
			longest = s
		}
	}
	if longest == nil {
		return ""
	}
	var parts []string
	for _, l := range x.Path.Chain {
		parts = append(parts, fmt.Sprintf("%s (tid %d) %s %s (tid %d)", format.Safe(l.WaiterComm), l.WaiterTID,
			handOff[l.Reason], format.Safe(l.WorkerComm), l.WorkerTID))
	}
	end := fmt.Sprintf("%s (tid %d): %s", format.Safe(longest.Comm), longest.TID, longest.Reason)
	if longest.Object != "" {
		end += " on " + format.Safe(longest.Object)
	}
	if longest.OwnReason != "" {
		// the last process of the chain was itself idle: say so plainly
		end = fmt.Sprintf("%s (pid %d) %s meanwhile", format.Safe(longest.Comm), longest.PID, ownIdleWords[longest.OwnReason])
	} else if longest.BlockedByPID != 0 {
		end += fmt.Sprintf(", held up by %s (pid %d)", format.Safe(longest.BlockedByComm), longest.BlockedByPID)
	}
	if len(parts) == 0 {
		return "" // the main thread's own time: the verdict said it all
	}
	return strings.Join(append(parts, end), " ← ")
}

// ownIdleWords: what an outside process did while the target waited on it
// and it did nothing for it.
var ownIdleWords = map[string]string{
	"sleep":                  "was asleep",
	string(event.ReasonIdle): "was idle, waiting for work of its own (its client, a connection)",
}

// handOff words how a waiter depended on a worker.
var handOff = map[string]string{
	"child":   "waited for",
	"lock":    "waited on a lock held by",
	"ipc":     "waited on a pipe or socket fed by",
	"network": "waited on a reply from",
	"other":   "was woken by",
	"sleep":   "polled while the work was done by",
}

// allThreads is the time summed over threads, by reason: evidence beside the
// path (a thread pool's time is larger than the wall time).
func allThreads(x *explain.Explanation) string {
	var parts []string
	add := func(r string, v float64) {
		if v >= 0.0005 {
			parts = append(parts, fmt.Sprintf("%s %s", r, format.Seconds(v)))
		}
	}
	add("cpu", x.Time.OnCPUS)
	add("runqueue", x.Time.RunqueueS)
	for _, r := range event.Reasons {
		if r.Derived() {
			add(string(r), x.Time.IdleS)
		} else {
			add(string(r), x.Time.OffCPUS[string(r)])
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ")
}

// PathChain words the hand-offs that lead to the verdict ("main waited for
// worker (tid 7) ← worker: disk-write on /f"), or "" when the main thread's
// own time explains it. Names are made safe for a terminal; other outputs
// (HTML) escape the result again for their own medium.
func PathChain(x *explain.Explanation) string { return pathChain(x) }
