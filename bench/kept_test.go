package main

import "testing"

func TestKeptBlocks(t *testing.T) {
	md := "# Benchmarks\n\n## 1. made\n\n<!-- kept: a -->\n## A\nby hand\n<!-- /kept -->\n\n## 2. made\n" +
		"<!-- kept: b -->\n## B\n<!-- /kept -->\ntrailing <!-- kept: cut -->\n## C, never closed\n"
	got := keptBlocks(md)
	want := []string{"<!-- kept: a -->\n## A\nby hand\n<!-- /kept -->\n\n", "<!-- kept: b -->\n## B\n<!-- /kept -->\n\n"}
	if len(got) != len(want) {
		t.Fatalf("kept %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: %q, want %q", i, got[i], want[i])
		}
	}
}
