package output

import (
	"encoding/json"
	"io"
	"reflect"
)

// JSON writes v indented. A list or map the schema promises is [] or {} when
// empty, never null: `jq '.network[]'` must work on a run with no network.
// Only pointers (an unknown exit code) and interfaces may be null.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(nonNil(reflect.ValueOf(v)).Interface())
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
