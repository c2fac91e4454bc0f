package output

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONListsNeverNull(t *testing.T) {
	type inner struct {
		Files []string          `json:"files"`
		Lost  map[string]uint64 `json:"lost"`
	}
	type doc struct {
		Network []int          `json:"network"`
		Nested  []inner        `json:"nested"`
		Ptr     *inner         `json:"ptr"`
		Nil     *inner         `json:"nil"`
		Any     any            `json:"any"`
		ByName  map[string]any `json:"by_name"`
		Raw     []byte         `json:"raw"`
		private []int
	}
	v := doc{Nested: []inner{{}}, Ptr: &inner{}, Any: inner{}, ByName: map[string]any{"x": inner{}}}
	var b bytes.Buffer
	if err := JSON(&b, v); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	// Only the nil pointer and the nil []byte (a string in JSON) stay null.
	if n := strings.Count(b.String(), "null"); n != 2 {
		t.Fatalf("%d nulls, want 2 (nil pointer, nil bytes):\n%s", n, b.String())
	}
	if _, ok := got["network"].([]any); !ok {
		t.Fatalf("network = %#v, want []", got["network"])
	}
	if got["any"].(map[string]any)["files"] == nil {
		t.Fatalf("a list inside an interface is null:\n%s", b.String())
	}
	if v.Network != nil || v.Nested[0].Files != nil {
		t.Fatal("JSON changed its argument")
	}
}
