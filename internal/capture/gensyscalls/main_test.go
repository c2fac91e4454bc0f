package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// The committed header is what the Go table makes: a syscall added or
// reclassified in internal/event without `make generate` fails here.
func TestHeaderIsGenerated(t *testing.T) {
	got, err := os.ReadFile("../../../bpf/syscalls.h")
	if err != nil {
		t.Fatal(err)
	}
	if want := header(); !bytes.Equal(got, want) {
		t.Fatalf("bpf/syscalls.h is not what internal/event's table makes: run 'make generate' and commit\nwant:\n%s", want)
	}
}

// The header says what the table says, read back as C: each number once,
// each syscall in its class's case block.
func TestHeaderSaysTheTable(t *testing.T) {
	h := string(header())
	calls := event.TracedSyscalls()
	if len(calls) < 40 {
		t.Fatalf("only %d traced syscalls", len(calls))
	}
	class := map[string]string{}
	for _, blk := range regexp.MustCompile(`((?:case NR_\w+:\s*)+)\s*return CLS_(\w+);`).FindAllStringSubmatch(h, -1) {
		for _, m := range regexp.MustCompile(`NR_(\w+)`).FindAllStringSubmatch(blk[1], -1) {
			class[m[1]] = blk[2]
		}
	}
	for _, s := range calls {
		m := regexp.MustCompile(`NR_` + s.Name + ` = (\d+),`).FindStringSubmatch(h)
		if m == nil || m[1] != strconv.Itoa(int(s.Nr)) {
			t.Errorf("%s: number %v, want %d", s.Name, m, s.Nr)
		}
		if got, want := class[s.Name], s.Class.String(); got != upper(want) {
			t.Errorf("%s: class %s, want %s", s.Name, got, want)
		}
	}
}

func upper(s string) string { return string(bytes.ToUpper([]byte(s))) }
