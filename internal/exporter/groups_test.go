package exporter

import (
	"fmt"
	"testing"
)

// At most n keys get a label; the rest are "other"; a label is kept while a
// busier newcomer waits, and given up only to one much busier, after a while.
func TestLabelsAreBoundedAndSticky(t *testing.T) {
	l := newLabels(2)
	l.update(map[string]float64{"a": 3, "b": 2, "c": 1})
	if l.of("a") != "a" || l.of("b") != "b" || l.of("c") != Other {
		t.Fatalf("labels a=%s b=%s c=%s", l.of("a"), l.of("b"), l.of("c"))
	}
	// c becomes far busier than b: b keeps its label for minFrames first
	var dropped []string
	frames := 0
	for ; frames < 2*minFrames && len(dropped) == 0; frames++ {
		dropped = l.update(map[string]float64{"a": 3, "c": 10})
	}
	if fmt.Sprint(dropped) != "[b]" || frames < minFrames-1 {
		t.Fatalf("after %d frames dropped %v, want [b] after about %d", frames, dropped, minFrames)
	}
	if l.of("c") != "c" || l.of("b") != Other || len(l.labeled) != 2 {
		t.Fatalf("labels %v", l.labeled)
	}
}

func TestTrackedKeysAreBounded(t *testing.T) {
	l := newLabels(1)
	for i := range 1500 {
		l.update(map[string]float64{fmt.Sprint(i): 1})
	}
	if len(l.score) > l.maxTracked {
		t.Fatalf("%d keys tracked, bound %d", len(l.score), l.maxTracked)
	}
}
