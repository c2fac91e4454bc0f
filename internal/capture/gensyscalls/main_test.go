package main

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// The committed bpf/conversation.h is what internal/event's conversation
// rule makes.
func TestConversationIsGenerated(t *testing.T) {
	got, err := os.ReadFile("../../../bpf/conversation.h")
	if err != nil {
		t.Fatal(err)
	}
	if want := conversation(); !bytes.Equal(got, want) {
		t.Fatalf("bpf/conversation.h is not what internal/event/conversation.go makes: run 'make generate' and commit\nwant:\n%s", want)
	}
}

// The conversation header says what internal/event says, read back as C:
// each direction's class and net calls, the calls that open a connection
// with their end, and the lengths that say which bytes of a read are kept.
func TestConversationSaysTheRule(t *testing.T) {
	h := string(conversation())
	for fn, d := range map[string]event.Direction{"reads_conn": event.Reads, "writes_conn": event.Writes} {
		m := regexp.MustCompile(`bool ` + fn + `\(long nr, __u32 cls\)\s*\{\s*return ([^;]*);`).FindStringSubmatch(h)
		if m == nil {
			t.Fatalf("no %s in the header", fn)
		}
		var class string
		var net []string
		for _, w := range regexp.MustCompile(`(CLS|NR)_(\w+)`).FindAllStringSubmatch(m[1], -1) {
			if w[1] == "CLS" {
				class = w[2]
			} else {
				net = append(net, w[2])
			}
		}
		if class != upper(d.Class.String()) || !slices.Equal(net, d.Net) {
			t.Errorf("%s: class %s and %v, want %s and %v", fn, class, net, d.Class, d.Net)
		}
	}
	ends := map[string]string{}
	for _, blk := range regexp.MustCompile(`((?:case NR_\w+:\s*)+)\s*return (END_\w+);`).FindAllStringSubmatch(h, -1) {
		for _, m := range regexp.MustCompile(`NR_(\w+)`).FindAllStringSubmatch(blk[1], -1) {
			ends[m[1]] = blk[2]
		}
	}
	if len(ends) != len(event.ConnOpeners) {
		t.Errorf("conn_opened_end knows %v, want %d calls", ends, len(event.ConnOpeners))
	}
	for _, o := range event.ConnOpeners {
		want := map[event.Side]string{event.SideServer: "END_SERVER", event.SideClient: "END_CLIENT"}[o.End]
		if ends[o.Name] != want {
			t.Errorf("conn_opened_end(NR_%s) = %s, want %s", o.Name, ends[o.Name], want)
		}
		if m := regexp.MustCompile(want + ` = (\d+),`).FindStringSubmatch(h); m == nil || m[1] != strconv.Itoa(int(o.End)) {
			t.Errorf("%s is %v in C, event.Side %d", want, m, o.End)
		}
	}
	for name, n := range map[string]int{"PAYLOAD_LEN": event.PayloadLen, "PAYLOAD_BATCH_LEN": event.PayloadBatchLen,
		"PAYLOAD_HEAD_LEN": event.PayloadHeadLen} {
		if !strings.Contains(h, "#define "+name+" "+strconv.Itoa(n)+"\n") {
			t.Errorf("%s is not %d", name, n)
		}
	}
}
