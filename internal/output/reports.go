package output

import (
	"fmt"
	"github.com/whyslow/whyslow/internal/event"
	"io"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/format"
)

// Header prints the recording's time range and any lost events: every
// analysis starts with it, since loss can make any number low.
func Header(w io.Writer, s *explain.Source, f source.Filter, utc bool) {
	b, e := s.Clock.StartMono, s.Clock.EndMono
	if f.Begin != 0 {
		b = f.Begin
	}
	if f.End != 0 {
		e = f.End
	}
	day := s.Clock.Wall(b)
	if utc {
		day = day.UTC()
	}
	fmt.Fprintf(w, "Timerange: [%s %s, %s]\n", day.Format("2006-01-02"), format.Clock(s.Clock.Wall(b), utc), format.Clock(s.Clock.Wall(e), utc))
	if lost, sources := LostWords(s.Lost); lost > 0 {
		fmt.Fprintf(w, "warning: %d events were lost while recording (%s): totals may be low\n", lost, sources)
	}
}

// LostWords sums the lost counts and names their sources: "offcpu 3,
// unseen_wait 2" (those that lost nothing left out).
func LostWords(lost map[string]uint64) (uint64, string) {
	var sum uint64
	var parts []string
	for src, n := range lost {
		if n > 0 && src != event.LostRebuilt { // rebuilt, not missing
			sum += n
			parts = append(parts, fmt.Sprintf("%s %d", src, n))
		}
	}
	sort.Strings(parts)
	return sum, strings.Join(parts, ", ")
}

// Usage prints iousagetop.
func Usage(w io.Writer, u *reports.Usage) {
	if !u.Calls {
		fmt.Fprintln(w, "(default-level recording: no read or write call was hooked. Bytes and calls per process are the")
		fmt.Fprintln(w, " kernel's own accounting; per file, what was dirtied and read from storage. The split by file,")
		fmt.Fprintln(w, " socket and pipe, and page-cache reads per file, need --syscalls or --full)")
	}
	Heading(w, "Per-process I/O (the kernel's accounting: every read and write call)")
	if len(u.Accounting) == 0 {
		fmt.Fprintln(w, "(none: no process read or wrote, or the recording predates this accounting)")
	} else {
		t := Table{Cols: []Column{{Title: "process", Max: 28}, {Title: "read", Right: true}, {Title: "written", Right: true},
			{Title: "read calls", Right: true}, {Title: "write calls", Right: true}, {Title: "from storage", Right: true}, {Title: "to storage", Right: true}}}
		for _, p := range u.Accounting {
			t.Row(fmt.Sprintf("%s (%d)", p.Comm, p.PID), format.Bytes(p.ReadBytes), format.Bytes(p.WriteBytes),
				p.ReadCalls, p.WriteCalls, format.Bytes(p.FromStorage), format.Bytes(p.ToStorage))
		}
		t.Write(w)
	}
	if u.Calls {
		Heading(w, "Per-process I/O Read")
		processBars(w, u.Processes, func(p reports.ProcessIO) (uint64, [4]uint64) {
			return p.Read(), [4]uint64{p.ReadFile, p.ReadNet, p.ReadIPC, p.ReadOther}
		})
		Heading(w, "Per-process I/O Write")
		processBars(w, u.Processes, func(p reports.ProcessIO) (uint64, [4]uint64) {
			return p.Write(), [4]uint64{p.WriteFile, p.WriteNet, p.WriteIPC, p.WriteOther}
		})
	}
	title := "Per-file I/O (read + written)"
	if !u.Calls {
		title = "Per-file I/O (dirtied + read from storage)"
	}
	Heading(w, title)
	size := func(f reports.FileIO) uint64 { return max(f.Read+f.Write, f.Dirtied+f.FromStorage) }
	var maxF uint64
	for _, f := range u.Files {
		maxF = max(maxF, size(f))
	}
	if len(u.Files) == 0 {
		fmt.Fprintln(w, "(no file was read or written)")
	}
	for _, f := range u.Files {
		fmt.Fprintf(w, "%-20s %10s  %s\n", Bar(float64(size(f)), float64(maxF), 20),
			format.Bytes(size(f)), format.Safe(TrimLeft(f.Path, 46)))
		if f.Dirtied+f.FromStorage > 0 {
			fmt.Fprintf(w, "%33sdirtied %s, read from storage %s\n", "", format.Bytes(f.Dirtied), format.Bytes(f.FromStorage))
		}
		users := f.Users
		if len(users) > 4 {
			users = append(users[:4:4], fmt.Sprintf("and %d more", len(f.Users)-4))
		}
		for _, us := range users {
			fmt.Fprintf(w, "%33s%s\n", "", format.Safe(TrimLeft(us, 46)))
		}
	}
	if u.Calls && !u.Exact {
		fmt.Fprintln(w, "(fds are known for streamed calls only; record with --full for every fd)")
	}
	Heading(w, "Block I/O (issued, and writes charged to who dirtied the data)")
	t := Table{Cols: []Column{{Title: "process", Max: 28}, {Title: "read", Right: true}, {Title: "write issued", Right: true}, {Title: "write charged", Right: true}}}
	for _, b := range u.Block {
		t.Row(fmt.Sprintf("%s (%d)", b.Comm, b.PID), format.Bytes(b.Read), format.Bytes(b.WriteIssued), format.Bytes(b.WriteCharged))
	}
	if len(u.Block) == 0 {
		fmt.Fprintln(w, "(no block I/O)")
	} else {
		t.Write(w)
	}
	if len(u.Network) > 0 {
		Heading(w, "Network by interface")
		t := Table{Cols: []Column{{Title: "interface"}, {Title: "received", Right: true}, {Title: "sent", Right: true}}}
		for _, n := range u.Network {
			t.Row(n.Interface, format.Bytes(n.Received), format.Bytes(n.Sent))
		}
		t.Write(w)
	}
}

func processBars(w io.Writer, ps []reports.ProcessIO, get func(reports.ProcessIO) (uint64, [4]uint64)) {
	sorted := append([]reports.ProcessIO(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool { a, _ := get(sorted[i]); b, _ := get(sorted[j]); return a > b })
	var maxV uint64
	for _, p := range sorted {
		v, _ := get(p)
		maxV = max(maxV, v)
	}
	for _, p := range sorted {
		v, parts := get(p)
		if v == 0 {
			continue
		}
		name := TrimLeft(fmt.Sprintf("%s (%d)", format.Safe(p.Comm), p.PID), 22)
		var split []string
		for i, kind := range []string{"file", "net", "ipc", "other"} {
			if parts[i] > 0 {
				split = append(split, short(parts[i])+" "+kind)
			}
		}
		fmt.Fprintf(w, "%-12s %9s  %-22s %s\n", Bar(float64(v), float64(maxV), 12), format.Bytes(v), name, strings.Join(split, ", "))
	}
}

// short is Bytes without the space, for dense lines.
func short(n uint64) string { return strings.ReplaceAll(format.Bytes(n), " ", "") }

// Stats prints iolatencystats.
func Stats(w io.Writer, st *reports.Stats) {
	Heading(w, "Syscall latency statistics")
	t := Table{Cols: []Column{{Title: "class"}, {Title: "count", Right: true}, {Title: "min", Right: true}, {Title: "avg", Right: true},
		{Title: "p50", Right: true}, {Title: "p90", Right: true}, {Title: "p99", Right: true}, {Title: "max", Right: true}, {Title: "stdev", Right: true}}}
	approx := false
	for _, c := range st.Syscalls {
		mark := ""
		if c.Approximate {
			mark, approx = "~", true
		}
		stdev := "-"
		if c.StdevNS >= 0 {
			stdev = format.Dur(uint64(c.StdevNS))
		}
		t.Row(c.Class, c.Count, mark+format.Dur(c.MinNS), format.Dur(uint64(c.AvgNS)), mark+format.Dur(c.P50NS), mark+format.Dur(c.P90NS),
			mark+format.Dur(c.P99NS), format.Dur(c.MaxNS), stdev)
	}
	t.Write(w)
	if approx {
		fmt.Fprintln(w, "~ from log2 buckets: fast calls were counted in the kernel (default level); record --full for exact values")
	}
	if len(st.Disks) > 0 {
		Heading(w, "Disk latency (queue: inserted to issued; service: issued to completed)")
		t := Table{Cols: []Column{{Title: "device"}, {Title: "requests", Right: true}, {Title: "queue avg", Right: true}, {Title: "queue max", Right: true},
			{Title: "svc avg", Right: true}, {Title: "svc p99", Right: true}, {Title: "svc max", Right: true}}}
		for _, d := range st.Disks {
			t.Row(d.Device, d.Requests, format.Dur(uint64(d.QueueAvg)), format.Dur(d.QueueMax), format.Dur(uint64(d.ServAvg)), format.Dur(d.ServP99), format.Dur(d.ServMax))
		}
		t.Write(w)
	}
}

// Freq prints iolatencyfreq.
func Freq(w io.Writer, fs []reports.Freq) {
	for _, f := range fs {
		Heading(w, fmt.Sprintf("%s latency distribution", f.Class))
		histogram(w, f.Linear)
		if len(f.Log2) > 0 {
			fmt.Fprintln(w, "\nlog2 buckets (all calls):")
			histogram(w, f.Log2)
		}
	}
}

func histogram(w io.Writer, bs []reports.Bucket) {
	var maxC uint64
	for _, b := range bs {
		maxC = max(maxC, b.Count)
	}
	for _, b := range bs {
		fmt.Fprintf(w, "%10s - %-10s %8d  %s\n", format.Dur(b.LowNS), format.Dur(b.HighNS), b.Count, Bar(float64(b.Count), float64(maxC), 40))
	}
}

// Ops prints top and log rows, the file on its own line to stay within 80
// columns; a * marks operations that began or ended outside the selected range.
func Ops(w io.Writer, title string, ops []reports.Op, utc bool) {
	Heading(w, title)
	fmt.Fprintf(w, "%-16s %9s  %-16s %9s  %s\n", "begin", "duration", "syscall", "size", "process pid/tid")
	for _, o := range ops {
		size := ""
		if o.Size != nil {
			size = format.Bytes(uint64(*o.Size))
		}
		mark := " "
		if o.Outside {
			mark = "*"
		}
		proc := TrimLeft(fmt.Sprintf("%s %d/%d", format.Safe(o.Comm), o.PID, o.TID), 24)
		fmt.Fprintf(w, "%s%-15s %9s  %-16s %9s  %s\n", mark, format.Clock(o.BeginAt, utc)[:15], format.Dur(o.DurNS), o.Syscall, size, proc)
		if o.Path != "" {
			file := format.Safe(o.Path)
			if o.FD >= 0 {
				file = fmt.Sprintf("fd %d  %s", o.FD, file)
			}
			fmt.Fprintf(w, "%18s%s\n", "", TrimLeft(file, 62))
		}
	}
}
