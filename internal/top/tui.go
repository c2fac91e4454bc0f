package top

import (
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/live"
)

// FrameMsg delivers a new frame to the interactive view.
type FrameMsg struct {
	Frame *live.Frame
	At    time.Time // wall time of the frame's end
}

// ErrMsg ends the interactive view with an error (capture stopped).
type ErrMsg struct{ Err error }

// Model is the interactive view's state; View draws it with Render.
type Model struct {
	st            State
	frame         *live.Frame
	at            time.Time
	width, height int
	// editing is the filter being typed: "name" or "cgroup", "" when none.
	editing string
	text    string
	Err     error
}

// NewModel opens the view with no frame yet.
func NewModel(st State) Model { return Model{st: st} }

func (m Model) Init() tea.Cmd { return nil }

func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case FrameMsg:
		if !m.st.Paused || m.frame == nil {
			m.frame, m.at = msg.Frame, msg.At
		}
	case ErrMsg:
		m.Err = msg.Err
		return m, tea.Quit
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	if k.Type == tea.KeyCtrlC {
		return m, tea.Quit
	}
	if m.editing != "" {
		return m.edit(k), nil
	}
	if m.st.Help {
		m.st.Help = false
		return m, nil
	}
	switch k.String() {
	case "q":
		return m, tea.Quit
	case "<", ",":
		m.st.Sort = nextSort(m.st.Sort, -1)
	case ">", ".":
		m.st.Sort = nextSort(m.st.Sort, +1)
	case "/":
		m.editing, m.text = "name", m.st.Name
	case "g":
		m.editing, m.text = "cgroup", m.st.Cgroup
	case "t":
		m.st.Threads, m.st.Cgroups = !m.st.Threads, false
	case "c":
		m.st.Cgroups, m.st.Threads = !m.st.Cgroups, false
	case "p", " ":
		m.st.Paused = !m.st.Paused
	case "h", "?":
		m.st.Help = true
	}
	return m, nil
}

// edit takes one key of a filter being typed.
func (m Model) edit(k tea.KeyMsg) Model {
	switch k.Type {
	case tea.KeyEnter:
		m.setFilter(m.text)
		m.editing = ""
	case tea.KeyEsc:
		m.setFilter("")
		m.editing = ""
	case tea.KeyBackspace:
		if r := []rune(m.text); len(r) > 0 {
			m.text = string(r[:len(r)-1])
		}
	case tea.KeyRunes, tea.KeySpace:
		if len(m.text) < 64 {
			m.text += string(k.Runes)
		}
	}
	return m
}

func (m *Model) setFilter(s string) {
	if m.editing == "name" {
		m.st.Name = s
	} else {
		m.st.Cgroup = s
	}
}

func nextSort(cur, step int) int {
	keys := sortable()
	for i, k := range keys {
		if k == cur {
			return keys[(i+step+len(keys))%len(keys)]
		}
	}
	return defaultSort
}

func (m Model) View() string {
	if m.frame == nil {
		return "whyslow top: capturing the first interval…\n"
	}
	h := m.height
	if m.editing != "" {
		h--
	}
	// no newline after the last line: it would push the title off the screen
	s := strings.TrimSuffix(Render(m.frame, m.st, m.width, h, m.at), "\n")
	if m.editing != "" {
		s += "\nfilter " + m.editing + ": " + format.Safe(m.text) + "_"
	}
	return s
}
