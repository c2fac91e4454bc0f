package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"unicode/utf8"
)

// JSON writes v indented. A list or map the schema promises is [] or {} when
// empty, never null: `jq '.network[]'` must work on a run with no network.
// Only pointers (an unknown exit code) and interfaces may be null.
func JSON(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(nonNil(reflect.ValueOf(v)).Interface()); err != nil {
		return err
	}
	_, err := w.Write(escapeInvisible(b.Bytes()))
	return err
}

// escapeInvisible writes DEL, C1 controls and bidi controls as \uXXXX: the
// same strings to a JSON reader, but a terminal or a page showing the JSON
// does not act on them (a U+202E reverses the text after it). encoding/json
// escapes only those below 0x20. Outside strings, JSON has none of them.
func escapeInvisible(b []byte) []byte {
	clean := true
	for _, r := range string(b) {
		if invisible(r) {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for _, r := range string(b) {
		if invisible(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
			continue
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

func invisible(r rune) bool {
	return r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x200e || r == 0x200f
}

// nonNil returns a copy of v in which every nil slice and map, at any depth,
// is an empty one.
func nonNil(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // []byte marshals as a string
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(nonNil(v.Index(i)))
		}
		return out
	case reflect.Map:
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), nonNil(it.Value()))
		}
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(nonNil(v.Field(i)))
			}
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(nonNil(v.Elem()))
		return p
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		inner := nonNil(v.Elem())
		out := reflect.New(v.Type()).Elem()
		out.Set(inner)
		return out
	}
	return v
}
