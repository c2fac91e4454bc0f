package event

import (
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

// commOf is the kernel's cut of a name to a command name: 15 bytes,
// wherever a character happens to end.
func commOf(name string) string { return name[:min(len(name), 15)] }

func TestEncodeText(t *testing.T) {
	for _, c := range []struct{ raw, text string }{
		// valid UTF-8 stays byte for byte, backslashes and all
		{"python3", "python3"},
		{"/tmp/ünïcode/数据.txt", "/tmp/ünïcode/数据.txt"},
		{`C:\dir\file`, `C:\dir\file`},
		{`a\\b`, `a\\b`},
		{`\x41`, `\x41`},               // unescapes to "A": reads as nothing else
		{`\xc3\xa9`, `\xc3\xa9`},       // unescapes to "é", valid
		{"evil\x1b[2J", "evil\x1b[2J"}, // control characters are the display's business (format.Safe)
		{"", ""},
		// bytes outside valid UTF-8 are \xNN, and backslashes in such a name \\
		{"\xff\xfeprog", `\xff\xfeprog`},
		{"/tmp/bad\xffname/x", `/tmp/bad\xffname/x`},
		{"a\\b\xff", `a\\b\xff`},
		{"\xe6\x95", `\xe6\x95`}, // a character's first two bytes
		// a valid name that would read as an escaped one is escaped too
		{`\xff`, `\\xff`},
		{`\\xff`, `\\\\xff`},
		{`x\xffy\\z`, `x\\xffy\\\\z`},
	} {
		got := EncodeText(c.raw)
		if got != c.text {
			t.Errorf("EncodeText(%q) = %q, want %q", c.raw, got, c.text)
		}
		if !utf8.ValidString(got) {
			t.Errorf("EncodeText(%q) = %q is not UTF-8", c.raw, got)
		}
		if back := DecodeText(got); back != c.raw {
			t.Errorf("DecodeText(%q) = %q, want %q", got, back, c.raw)
		}
	}
}

// A command name cut by the kernel in the middle of a character keeps the
// whole characters as they are and the stray bytes as \xNN.
func TestEncodeTextCommCutMidCharacter(t *testing.T) {
	comm := commOf("my数据库服务进程") // 2 + 4×3 bytes, then the first of 务's 3
	if utf8.ValidString(comm) {
		t.Fatalf("%q should be cut mid-character", comm)
	}
	if got, want := EncodeText(comm), `my数据库服\xe5`; got != want {
		t.Fatalf("EncodeText(%q) = %q, want %q", comm, got, want)
	}
	if whole := commOf("数据库服务进程"); EncodeText(whole) != whole {
		t.Errorf("a cut at a character's end must stay as it is: %q", EncodeText(whole))
	}
}

// Every name round-trips, and two names never share a text: names made of
// the bytes that matter here (backslash, x, hex digits, a stray byte, a
// whole character).
func TestEncodeTextRoundTripsAndIsOneToOne(t *testing.T) {
	alphabet := []string{`\`, "x", "f", "e", "0", "a", "\xff", "\xc3", "é", "/"}
	rng := rand.New(rand.NewSource(1))
	seen := map[string]string{}
	for range 200_000 {
		var b strings.Builder
		for range rng.Intn(8) {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		raw := b.String()
		text := EncodeText(raw)
		if !utf8.ValidString(text) {
			t.Fatalf("EncodeText(%q) = %q is not UTF-8", raw, text)
		}
		if back := DecodeText(text); back != raw {
			t.Fatalf("EncodeText(%q) = %q decodes to %q", raw, text, back)
		}
		if other, ok := seen[text]; ok && other != raw {
			t.Fatalf("%q and %q are both encoded %q", raw, other, text)
		}
		seen[text] = raw
		if utf8.ValidString(raw) && !strings.Contains(raw, `\`) && text != raw {
			t.Fatalf("valid %q without a backslash changed to %q", raw, text)
		}
	}
}

// The hot path: a valid name costs no allocation.
func TestEncodeTextValidAllocatesNothing(t *testing.T) {
	name := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	if n := testing.AllocsPerRun(100, func() { EncodeText(name) }); n != 0 {
		t.Errorf("%v allocations for a valid name", n)
	}
}

func BenchmarkEncodeTextValid(b *testing.B) {
	for range b.N {
		EncodeText("/usr/lib/x86_64-linux-gnu/libc.so.6")
	}
}
