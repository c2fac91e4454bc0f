package output

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/whyslow/whyslow/internal/format"
)

// Column is one column of a text table.
type Column struct {
	Title string
	Right bool // align right (numbers)
	Max   int  // truncate longer cells (0: no limit); paths keep their tail
}

// Table is a text table: columns sized to their content, cells made Safe.
type Table struct {
	Cols []Column
	rows [][]string
}

// Row adds a row; values are formatted with %v and made Safe.
func (t *Table) Row(vals ...any) {
	r := make([]string, len(t.Cols))
	for i := range t.Cols {
		if i < len(vals) {
			s := format.Safe(fmt.Sprint(vals[i]))
			if m := t.Cols[i].Max; m > 0 && utf8.RuneCountInString(s) > m {
				s = TrimLeft(s, m)
			}
			r[i] = s
		}
	}
	t.rows = append(t.rows, r)
}

// Write prints the table with a header line.
func (t *Table) Write(w io.Writer) {
	width := make([]int, len(t.Cols))
	for i, c := range t.Cols {
		width[i] = utf8.RuneCountInString(c.Title)
	}
	for _, r := range t.rows {
		for i, s := range r {
			width[i] = max(width[i], utf8.RuneCountInString(s))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		for i, s := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(s))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.Cols[i].Right {
				b.WriteString(pad + s)
			} else if i == len(cells)-1 {
				b.WriteString(s)
			} else {
				b.WriteString(s + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	titles := make([]string, len(t.Cols))
	for i, c := range t.Cols {
		titles[i] = c.Title
	}
	line(titles)
	for _, r := range t.rows {
		line(r)
	}
}

// TrimLeft keeps the last n runes of s behind an ellipsis: the end of a path
// says the most.
func TrimLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 2 {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// Bar draws value as a bar of at most width cells, scaled to maxVal.
func Bar(value, maxVal float64, width int) string {
	if maxVal <= 0 || value <= 0 {
		return ""
	}
	eighths := int(value / maxVal * float64(width*8))
	full, rem := eighths/8, eighths%8
	partial := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	s := strings.Repeat("█", full) + partial[rem]
	if s == "" {
		s = "▏"
	}
	return s
}

// Heading prints a section title underlined, as LTTng's analyses do.
func Heading(w io.Writer, title string) {
	fmt.Fprintf(w, "\n%s\n%s\n", title, strings.Repeat("#", min(utf8.RuneCountInString(title), 78)))
}
