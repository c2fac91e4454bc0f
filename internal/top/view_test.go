package top

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/live"
)

func frame() *live.Frame {
	out := live.Object{File: event.FileRef{Dev: 1, Ino: 2, Kind: event.KindRegular}}
	f := &live.Frame{Start: 0, End: 1e9, Procs: map[uint32]*live.Proc{}, Names: map[live.Object]string{
		out: "/mnt/slow/a/very/long/directory/name/that/goes/on/and/on/out.dat"}}
	add := func(pid uint32, comm string, cpu uint64, waits map[event.Reason]uint64, on map[live.Object]uint64) {
		f.Procs[pid] = &live.Proc{PID: pid, Comm: comm, Cgroup: "/system.slice/x.service",
			Times: live.Times{CPU: cpu, Wait: waits, On: on}}
	}
	add(10, "dd", 20e6, map[event.Reason]uint64{event.ReasonDirtyThrottle: 900e6}, map[live.Object]uint64{out: 900e6})
	add(11, "busy", 990e6, map[event.Reason]uint64{event.ReasonRunqueue: 5e6}, nil)
	add(12, "idle", 0, map[event.Reason]uint64{event.ReasonSleep: 1e9}, nil)
	return f
}

func TestRenderRanksByLostAndFitsTheWidth(t *testing.T) {
	s := Render(frame(), NewState(time.Second), 80, 24, time.Unix(0, 0))
	rows := strings.Split(s, "\n")
	for _, l := range rows {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	var order []string
	for _, l := range rows {
		if f := strings.Fields(l); len(f) > 2 && (f[1] == "dd" || f[1] == "busy" || f[1] == "idle") {
			order = append(order, f[1])
		}
	}
	if strings.Join(order, " ") != "dd busy idle" {
		t.Errorf("rows in order %v, want dd busy idle:\n%s", order, s)
	}
	if !strings.Contains(s, "on/out.dat") || !strings.Contains(s, "90") {
		t.Errorf("the writer's file and share are missing:\n%s", s)
	}
}

func TestNamesCannotInjectTheTerminal(t *testing.T) {
	f := frame()
	f.Procs[10].Comm = "evil\x1b]0;owned\x07" // as the aggregator hands it, after format.Safe? make sure either way
	st := NewState(time.Second)
	st.Name = "\x1b[2J"
	s := Render(f, st, 0, 0, time.Unix(0, 0))
	if strings.Contains(s, "\x1b[2J") {
		t.Errorf("the filter's escape reached the screen")
	}
}

func TestKeys(t *testing.T) {
	var m tea.Model = NewModel(NewState(time.Second))
	m, _ = m.Update(FrameMsg{Frame: frame(), At: time.Unix(0, 0)})
	press := func(keys ...tea.KeyMsg) {
		for _, k := range keys {
			m, _ = m.Update(k)
		}
	}
	runes := func(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
	press(runes("/"), runes("b"), runes("u"), tea.KeyMsg{Type: tea.KeyEnter})
	if v := m.View(); strings.Contains(v, " dd ") || !strings.Contains(v, "busy") || !strings.Contains(v, "name~bu") {
		t.Errorf("filter bu:\n%s", v)
	}
	press(runes("/"), tea.KeyMsg{Type: tea.KeyEsc}, runes(">"), runes("p"))
	v := m.View()
	if !strings.Contains(v, "sort CPU") || !strings.Contains(v, "PAUSED") || !strings.Contains(v, " dd ") {
		t.Errorf("after Esc, > and p:\n%s", v)
	}
	other := frame()
	delete(other.Procs, 10)
	m, _ = m.Update(FrameMsg{Frame: other, At: time.Unix(5, 0)})
	if !strings.Contains(m.View(), " dd ") {
		t.Errorf("a paused view changed")
	}
	if _, cmd := m.Update(runes("q")); cmd == nil {
		t.Errorf("q does not quit")
	}
}

func TestCgroupsSumTheirProcesses(t *testing.T) {
	f := frame()
	f.Procs[13] = &live.Proc{PID: 13, Comm: "worker", Cgroup: "/docker/" + strings.Repeat("4f", 32),
		Times: live.Times{CPU: 200e6, Wait: map[event.Reason]uint64{event.ReasonCPUQuota: 700e6}}}
	f.Procs[14] = &live.Proc{PID: 14, Comm: "worker", Cgroup: "/docker/" + strings.Repeat("4f", 32),
		Times: live.Times{CPU: 200e6, Wait: map[event.Reason]uint64{event.ReasonCPUQuota: 600e6}}}
	st := NewState(time.Second)
	st.Cgroups = true
	s := Render(f, st, 0, 0, time.Unix(0, 0))
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "docker 4f4f") || strings.Contains(l, "x.service") {
			lines = append(lines, l)
		}
	}
	// The container's two processes lost 1.3 s to its quota: first, 130%.
	if len(lines) != 2 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "2 docker 4f4f") ||
		!strings.Contains(lines[0], " 130 ") || !strings.Contains(s, "by cgroup") {
		t.Errorf("want the container's row (2 processes, 130%% lost) before x.service's:\n%s", s)
	}
	if f := strings.Fields(lines[1]); len(f) < 2 || f[0] != "3" {
		t.Errorf("x.service's row counts %v processes, want 3:\n%s", f, s)
	}
}
