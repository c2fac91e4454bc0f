package htmlreport

import (
	"fmt"
	"sort"

	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/format"
)

// FlameNode is a frame of the off-CPU flame graph: all → reason → process →
// thread → kernel frames, outermost first.
type FlameNode struct {
	Name     string       `json:"n"`
	Reason   string       `json:"r,omitempty"`
	NS       uint64       `json:"v"`
	Children []*FlameNode `json:"c,omitempty"`
}

// minFlameShare: frames smaller than this share of the total are left out
// (too narrow to see, and they would make the page heavy).
const minFlameShare = 1.0 / 2000

// Flame builds the off-CPU flame graph's tree from folded stacks.
func Flame(stacks []reports.Stack) *FlameNode {
	root := &FlameNode{Name: "all"}
	index := map[*FlameNode]map[string]*FlameNode{}
	child := func(n *FlameNode, name, reason string) *FlameNode {
		m := index[n]
		if m == nil {
			m = map[string]*FlameNode{}
			index[n] = m
		}
		c := m[name]
		if c == nil {
			c = &FlameNode{Name: format.Safe(name), Reason: reason}
			m[name] = c
			n.Children = append(n.Children, c)
		}
		return c
	}
	for _, st := range stacks {
		if st.Reason == "cpu" {
			continue
		}
		root.NS += st.NS
		n := child(root, st.Reason, st.Reason)
		n.NS += st.NS
		n = child(n, fmt.Sprintf("%s (%d)", st.Process, st.PID), st.Reason)
		n.NS += st.NS
		n = child(n, fmt.Sprintf("%s (%d)", st.Thread, st.TID), st.Reason)
		n.NS += st.NS
		for _, f := range st.Frames {
			n = child(n, f, st.Reason)
			n.NS += st.NS
		}
	}
	prune(root, uint64(float64(root.NS)*minFlameShare))
	return root
}

func prune(n *FlameNode, min uint64) {
	kept := n.Children[:0]
	for _, c := range n.Children {
		if c.NS >= min && c.NS > 0 {
			prune(c, min)
			kept = append(kept, c)
		}
	}
	n.Children = kept
	sort.Slice(n.Children, func(i, j int) bool { return n.Children[i].NS > n.Children[j].NS })
}
