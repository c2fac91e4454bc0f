package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzJSONEscapesInvisible: a name in whyslow's JSON reads back as the same
// string encoding/json alone would give, while the bytes hold no DEL, C1 or
// bidi control a terminal or a page would act on.
func FuzzJSONEscapesInvisible(f *testing.F) {
	for _, s := range []string{"", "plain", "a\u202eb", "\x7f\u0085\u009b[31m", "\u2066\u2069\u200e\u200f", "\xff", `"\`, "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		if err := JSON(&b, map[string]string{"name": s}); err != nil {
			t.Fatal(err)
		}
		for _, r := range b.String() {
			if invisible(r) {
				t.Fatalf("JSON of %q holds %U raw: %s", s, r, b.String())
			}
		}
		var got map[string]string
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("JSON of %q does not decode: %v: %s", s, err, b.String())
		}
		ref, _ := json.Marshal(s)
		var want string
		json.Unmarshal(ref, &want)
		if got["name"] != want {
			t.Fatalf("%q came back %q, encoding/json gives %q", s, got["name"], want)
		}
		if strings.ContainsRune(b.String(), 0x1b) {
			t.Fatalf("JSON of %q holds ESC raw", s)
		}
	})
}
