// Package top draws whyslow's live view: processes ranked by wall time lost,
// with their reasons and what they wait on, devices like iostat, hot files
// like filetop, dirty pages and pressure. Drawing is a pure function of a
// frame and the person's choices (State): no I/O.
package top

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/live"
)

// State is what the person chose.
type State struct {
	Sort    int    // index into columns
	Name    string // show only commands containing this (case-insensitive)
	Cgroup  string // show only cgroups containing this
	Threads bool   // a row per thread instead of per process
	// Cgroups: a row per cgroup, its processes' times summed (as
	// systemd-cgtop), instead of per process.
	Cgroups bool
	Paused  bool
	Help    bool
	Every   time.Duration
	// Limit caps the process rows when the height does not (batch mode).
	Limit int
}

// NewState is the view as it opens: sorted by wall time lost.
func NewState(every time.Duration) State {
	return State{Sort: defaultSort, Every: every, Limit: 20}
}

// rows lists the frame's processes (or threads) that ran or waited, filtered
// and sorted as the state says.
func rows(f *live.Frame, st State) []row {
	secs := f.Seconds()
	if secs <= 0 {
		return nil
	}
	name := strings.ToLower(st.Name)
	var out []row
	add := func(id uint32, comm, cgroup string, t *live.Times) {
		if t.CPU == 0 && len(t.Wait) == 0 {
			return
		}
		if name != "" && !strings.Contains(strings.ToLower(comm), name) {
			return
		}
		if st.Cgroup != "" && !strings.Contains(cgroup, st.Cgroup) {
			return
		}
		r := row{id: id, comm: comm, cgroup: cgroup, times: t, secs: secs}
		if o, ns := t.Top(); ns > 0 {
			r.waitedOn, r.waitedFor = f.Names[o], ns
		}
		out = append(out, r)
	}
	switch {
	case st.Cgroups:
		for _, g := range cgroupTimes(f) {
			add(g.procs, event.CgroupName(g.path), g.path, &g.times)
		}
	case st.Threads:
		for _, p := range f.Procs {
			for _, t := range p.Threads {
				add(t.TID, t.Comm, p.Cgroup, &t.Times)
			}
		}
	default:
		for _, p := range f.Procs {
			add(p.PID, p.Comm, p.Cgroup, &p.Times)
		}
	}
	key := columns[st.Sort].share
	lost := columns[defaultSort].share
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if ka, kb := key(a), key(b); ka != kb {
			return ka > kb
		}
		if la, lb := lost(a), lost(b); la != lb {
			return la > lb
		}
		return a.id < b.id
	})
	return out
}

// cgroupRow is a cgroup's processes in a frame, their times summed.
type cgroupRow struct {
	path  string
	procs uint32
	times live.Times
}

// cgroupTimes sums the frame's processes by cgroup ("?" for a process that
// left before its cgroup was read).
func cgroupTimes(f *live.Frame) []*cgroupRow {
	by := map[string]*cgroupRow{}
	var out []*cgroupRow
	for _, p := range f.Procs {
		path := p.Cgroup
		if path == "" {
			path = "?"
		}
		g := by[path]
		if g == nil {
			g = &cgroupRow{path: path}
			by[path] = g
			out = append(out, g)
		}
		g.procs++
		g.times.Add(&p.Times)
	}
	return out
}

// Render draws one screen of width × height (0, 0: everything, for batch
// output). now is the wall time of the frame's end.
func Render(f *live.Frame, st State, width, height int, now time.Time) string {
	var b strings.Builder
	line := func(s string) {
		if width > 0 {
			s = cut(s, width)
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	line(titleLine(st, height, now))
	line(systemLine(f))
	if st.Help {
		for _, l := range helpLines() {
			line(l)
		}
		return b.String()
	}

	rs, devs, files := fit(f, st, width, height)
	line("")
	cols := visible(width)
	line(header(cols, width))
	for i := range rs {
		line(cells(&rs[i], cols, width))
	}
	if len(devs) > 1 {
		line("")
		for _, l := range devs {
			line(l)
		}
	}
	if len(files) > 1 {
		line("")
		for _, l := range files {
			line(l)
		}
	}
	return b.String()
}

// titleLine names the view and every setting that changes what it shows,
// so that a screen read later says how it was made.
func titleLine(st State, height int, now time.Time) string {
	title := fmt.Sprintf("whyslow top  %s  every %s  sort %s", now.Format("15:04:05"), st.Every, columns[st.Sort].title)
	if st.Name != "" {
		title += "  name~" + format.Safe(st.Name)
	}
	if st.Cgroup != "" {
		title += "  cgroup~" + format.Safe(st.Cgroup)
	}
	switch {
	case st.Cgroups:
		title += "  by cgroup"
	case st.Threads:
		title += "  threads"
	}
	if st.Paused {
		title += "  PAUSED"
	}
	if height > 0 {
		title += "  (h: help)"
	}
	return title
}

// fit returns the rows, device lines and file lines (each a header first)
// that fit in height lines: the devices and files get at most a quarter
// of the screen each (and 5 and 6 lines), the rows the rest. Without a
// height (batch output) it keeps st.Limit rows and ten files.
func fit(f *live.Frame, st State, width, height int) (rs []row, devs, files []string) {
	devs = deviceLines(f)
	files = fileLines(f, width)
	rs = rows(f, st)
	limit := st.Limit
	if height <= 0 && len(files) > 11 {
		files = files[:11] // header and ten files
	}
	if height > 0 {
		// title, system, blank, header; blank+header before devices and files
		fixed := 4
		show := func(lines []string, most int) []string {
			if len(lines) > most {
				lines = lines[:most]
			}
			return lines
		}
		devs = show(devs, min(5, max(0, (height-fixed)/4)))
		files = show(files, min(6, max(0, (height-fixed)/4)))
		if len(devs) > 1 {
			fixed += len(devs) + 1
		}
		if len(files) > 1 {
			fixed += len(files) + 1
		}
		limit = max(1, height-fixed)
	}
	if len(rs) > limit {
		rs = rs[:limit]
	}
	return rs, devs, files
}

func systemLine(f *live.Frame) string {
	s := fmt.Sprintf("dirty %s  writeback %s", format.Bytes(f.System.DirtyBytes), format.Bytes(f.System.WritebackBytes))
	if len(f.System.PSI) > 0 {
		s += "  pressure avg10 some/full:"
		for _, res := range []string{"cpu", "io", "memory"} {
			if p, ok := f.System.PSI[res]; ok {
				s += fmt.Sprintf(" %s %.1f/%.1f%%", res, p.Some10, p.Full10)
			}
		}
	}
	var lost uint64
	for _, n := range f.Lost {
		lost += n
	}
	if lost > 0 {
		s += fmt.Sprintf("  LOST EVENTS %d", lost)
	}
	return s
}

func header(cols []int, width int) string {
	var parts []string
	for _, i := range cols {
		c := columns[i]
		if c.share != nil {
			parts = append(parts, pad(c.title, c.width, true))
		} else if c.flex {
			parts = append(parts, c.title)
		} else {
			parts = append(parts, pad(c.title, c.width, i == 0))
		}
	}
	return strings.Join(parts, " ")
}

func cells(r *row, cols []int, width int) string {
	var parts []string
	used := 0
	for _, i := range cols {
		c := columns[i]
		var s string
		switch {
		case c.share != nil:
			s = pad(share(c.share(r)), c.width, true)
		case c.flex:
			room := 0
			if width > 0 {
				room = max(c.width, width-used)
			}
			s = c.flexText(r, room)
		default:
			s = pad(cut(c.text(r), c.width), c.width, i == 0)
		}
		parts = append(parts, s)
		used += utf8.RuneCountInString(s) + 1
	}
	return strings.TrimRight(strings.Join(parts, " "), " ")
}

// share shows a share of one thread's time as a percentage.
func share(v float64) string {
	p := v * 100
	switch {
	case p == 0:
		return "0"
	case p < 10:
		return fmt.Sprintf("%.1f", p)
	}
	return fmt.Sprintf("%.0f", p)
}

func deviceLines(f *live.Frame) []string {
	devs := make([]*live.Device, 0, len(f.Devices))
	for _, d := range f.Devices {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool {
		a, b := devs[i], devs[j]
		if a.BusyNS != b.BusyNS {
			return a.BusyNS > b.BusyNS
		}
		if ab, bb := a.ReadBytes+a.WriteBytes, b.ReadBytes+b.WriteBytes; ab != bb {
			return ab > bb
		}
		return a.Dev < b.Dev
	})
	secs := f.Seconds()
	out := []string{"DEVICE         r/s     w/s   rMB/s   wMB/s  r_await  w_await  %util"}
	for _, d := range devs {
		out = append(out, fmt.Sprintf("%-10s %7.1f %7.1f %7.2f %7.2f %8s %8s %6.1f",
			cut(d.Name, 10), float64(d.Reads)/secs, float64(d.Writes)/secs,
			float64(d.ReadBytes)/secs/1e6, float64(d.WriteBytes)/secs/1e6,
			avgMS(d.ReadAwaitNS, d.Reads), avgMS(d.WriteAwaitNS, d.Writes),
			min(100, float64(d.BusyNS)/1e9/secs*100)))
	}
	return out
}

func avgMS(ns, n uint64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", float64(ns)/float64(n)/1e6)
}

func fileLines(f *live.Frame, width int) []string {
	files := make([]*live.FileStat, 0, len(f.Files))
	for _, fs := range f.Files {
		files = append(files, fs)
	}
	traffic := func(s *live.FileStat) uint64 { return s.Read + s.Written + s.Dirtied + s.DiskRead + s.DiskWritten }
	sort.Slice(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if a.Waited != b.Waited {
			return a.Waited > b.Waited
		}
		if ta, tb := traffic(a), traffic(b); ta != tb {
			return ta > tb
		}
		return a.Ref.Ino < b.Ref.Ino
	})
	secs := f.Seconds()
	rate := func(n uint64) string { return short(float64(n) / secs) }
	out := []string{"   WAITED  READ/s WRITE/s DIRTY/s DISKR/s DISKW/s FILE"}
	for _, fs := range files {
		name := f.Names[live.Object{File: fs.Ref}]
		l := fmt.Sprintf("%9s %7s %7s %7s %7s %7s ", waited(fs.Waited), rate(fs.Read), rate(fs.Written),
			rate(fs.Dirtied), rate(fs.DiskRead), rate(fs.DiskWritten))
		if width > 0 {
			name = cutLeft(name, max(10, width-utf8.RuneCountInString(l)))
		}
		out = append(out, l+name)
	}
	return out
}

// short writes a byte rate in at most 7 characters: 512, 12.5K, 3.0M.
func short(v float64) string {
	if v < 1 {
		return "0"
	}
	units := []string{"", "K", "M", "G", "T"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f%s", v, units[i])
}

func waited(ns uint64) string {
	if ns == 0 {
		return "0"
	}
	return format.Dur(ns)
}

func helpLines() []string {
	out := []string{"",
		"Keys",
		"  < >      sort by the previous / next column",
		"  /        filter by command name (Enter applies, Esc clears)",
		"  g        filter by cgroup",
		"  t        a row per thread / per process",
		"  c        a row per cgroup (its processes summed) / per process",
		"  p, space pause / resume",
		"  h, ?     this help (any key closes it)",
		"  q        quit",
		"",
		"Columns: % of one thread's time in the last interval (a process with",
		"several threads can pass 100%); LOST is the time waiting for a shared",
		"resource (runqueue, disk reads and writes, dirty throttling, sync).",
	}
	for _, c := range columns {
		out = append(out, fmt.Sprintf("  %-10s %s", c.title, c.help))
	}
	return out
}

func pad(s string, w int, right bool) string {
	n := utf8.RuneCountInString(s)
	if n >= w {
		return s
	}
	if right {
		return strings.Repeat(" ", w-n) + s
	}
	return s + strings.Repeat(" ", w-n)
}

// cut keeps the first w runes of s.
func cut(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	r := []rune(s)
	return string(r[:max(0, w-1)]) + "…"
}

// cutLeft keeps the last w runes: the end of a path says the most.
func cutLeft(s string, w int) string {
	n := utf8.RuneCountInString(s)
	if n <= w {
		return s
	}
	r := []rune(s)
	return "…" + string(r[n-max(0, w-1):])
}
