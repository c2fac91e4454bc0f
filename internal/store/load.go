package store

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/whyslow/whyslow/internal/event"
)

// A tableLoad fills one table's DuckDB data chunk column by column, each value
// stored straight into its vector's memory (DuckDB's C API), and hands every
// full chunk to the table's appender. duckdb-go's row Appender boxed each
// value into an interface, then found its setter by a map lookup and two type
// switches: about a quarter of the recorder's CPU time, and most of its
// garbage. Here a value costs a type check and a store.
type tableLoad struct {
	name  string
	app   mapping.Appender
	chunk mapping.DataChunk
	// cols are the values of a row, in order: a STRUCT column's fields
	// stand in its place, each one a column here (schema.go says why).
	cols []column
	size int // rows a chunk holds (DuckDB's vector size)
	n    int // rows in the chunk
	// rows is every row added, for the tables a finished recording says
	// it filled (Writer.filled).
	rows int
	// pending is rows handed to the appender since its last flush.
	pending int
	// wrong and err are the first row written wrongly (a value of another
	// type than its column's, too few or too many values): a bug, which end
	// reports.
	wrong *wrongValue
	err   error
}

// column is one vector of the chunk, and where its values go.
type column struct {
	vec      mapping.Vector
	typ      mapping.Type
	data     unsafe.Pointer
	validity unsafe.Pointer // nil until the chunk's first NULL here
	child    mapping.Vector // a list's elements
	childTyp mapping.Type
	top      int // the chunk's column this is, or is a field of
	field    int // the field of a STRUCT column, -1 for a column itself
}

// newTableLoad opens an appender on table over conn and a chunk of its
// column types.
func newTableLoad(conn mapping.Connection, table string) (*tableLoad, error) {
	t := &tableLoad{name: table, size: int(mapping.VectorSize())}
	if mapping.AppenderCreateExt(conn, "", "", table, &t.app) == mapping.StateError {
		err := errors.New(mapping.AppenderError(t.app))
		mapping.AppenderDestroy(&t.app)
		return nil, fmt.Errorf("opening appender for %s: %w", table, err)
	}
	n := int(mapping.AppenderColumnCount(t.app))
	types := make([]mapping.LogicalType, n)
	for i := range types {
		types[i] = mapping.AppenderColumnType(t.app, mapping.IdxT(i))
		if mapping.GetTypeId(types[i]) != mapping.TypeStruct {
			t.cols = append(t.cols, newColumn(types[i], i, -1))
			continue
		}
		for f := range int(mapping.StructTypeChildCount(types[i])) {
			field := mapping.StructTypeChildType(types[i], mapping.IdxT(f))
			t.cols = append(t.cols, newColumn(field, i, f))
			mapping.DestroyLogicalType(&field)
		}
	}
	t.chunk = mapping.CreateDataChunk(types)
	for i := range types {
		mapping.DestroyLogicalType(&types[i])
	}
	t.vectors()
	return t, nil
}

// newColumn is a value of type typ: the chunk's column top, or its field.
func newColumn(typ mapping.LogicalType, top, field int) column {
	c := column{typ: mapping.GetTypeId(typ), top: top, field: field}
	if c.typ == mapping.TypeList {
		child := mapping.ListTypeChildType(typ)
		c.childTyp = mapping.GetTypeId(child)
		mapping.DestroyLogicalType(&child)
	}
	return c
}

// vectors finds the chunk's buffers: after a reset they may have moved.
func (t *tableLoad) vectors() {
	for i := range t.cols {
		c := &t.cols[i]
		c.vec = mapping.DataChunkGetVector(t.chunk, mapping.IdxT(c.top))
		if c.field >= 0 {
			c.vec = mapping.StructVectorGetChild(c.vec, mapping.IdxT(c.field))
		}
		c.data = mapping.VectorGetData(c.vec)
		c.validity = nil
		if c.typ == mapping.TypeList {
			c.child = mapping.ListVectorGetChild(c.vec)
		}
	}
}

// row starts the chunk's next row.
func (t *tableLoad) row() row { return row{t: t} }

// appendChunk hands the rows of the chunk to the appender, and empties it.
func (t *tableLoad) appendChunk() error {
	if t.n == 0 {
		return nil
	}
	mapping.DataChunkSetSize(t.chunk, mapping.IdxT(t.n))
	if mapping.AppendDataChunk(t.app, t.chunk) == mapping.StateError {
		return fmt.Errorf("appending to %s: %s", t.name, mapping.AppenderError(t.app))
	}
	t.pending += t.n
	t.n = 0
	mapping.DataChunkReset(t.chunk) // clears validity masks and string heaps
	t.vectors()
	return nil
}

// flush writes every row appended so far into the table (in the
// connection's transaction, if one is open).
func (t *tableLoad) flush() error {
	if err := t.appendChunk(); err != nil {
		return err
	}
	if t.pending == 0 {
		return nil
	}
	if mapping.AppenderFlush(t.app) == mapping.StateError {
		return fmt.Errorf("flushing %s: %s", t.name, mapping.AppenderError(t.app))
	}
	t.pending = 0
	return nil
}

// close flushes what is left and frees the appender and the chunk.
func (t *tableLoad) close() error {
	err := t.appendChunk()
	if mapping.AppenderClose(t.app) == mapping.StateError && err == nil {
		err = fmt.Errorf("closing appender %s: %s", t.name, mapping.AppenderError(t.app))
	}
	mapping.AppenderDestroy(&t.app)
	mapping.DestroyDataChunk(&t.chunk)
	return err
}

// row writes one row: each method fills the next column, and end adds the
// row to the chunk.
type row struct {
	t *tableLoad
	c int
}

// col is the row's next column if it has type typ. Otherwise it notes the
// mistake, for end to report, and returns nil: kept this small, every
// value's write is inlined.
func (r row) col(typ mapping.Type) *column {
	if r.c < len(r.t.cols) && r.t.cols[r.c].typ == typ {
		return &r.t.cols[r.c]
	}
	if r.t.wrong == nil {
		r.t.wrong = &wrongValue{col: r.c, typ: typ}
	}
	return nil
}

// wrongValue is the first value written to a column of another type, or
// past the last column.
type wrongValue struct {
	col int
	typ mapping.Type
}

func (t *tableLoad) misuse(err error) {
	if t.err == nil {
		t.err = fmt.Errorf("loading %s: %w", t.name, err)
	}
}

// put stores v as the row's value in column c, whose elements are T.
func put[T any](r row, c *column, v T) {
	if c != nil {
		*(*T)(unsafe.Add(c.data, uintptr(r.t.n)*unsafe.Sizeof(v))) = v
	}
}

func (r row) u64(v uint64) row { put(r, r.col(mapping.TypeUBigInt), v); r.c++; return r }
func (r row) u32(v uint32) row { put(r, r.col(mapping.TypeUInteger), v); r.c++; return r }
func (r row) u16(v uint16) row { put(r, r.col(mapping.TypeUSmallInt), v); r.c++; return r }
func (r row) u8(v uint8) row   { put(r, r.col(mapping.TypeUTinyInt), v); r.c++; return r }
func (r row) i64(v int64) row  { put(r, r.col(mapping.TypeBigInt), v); r.c++; return r }
func (r row) i32(v int32) row  { put(r, r.col(mapping.TypeInteger), v); r.c++; return r }
func (r row) i16(v int16) row  { put(r, r.col(mapping.TypeSmallInt), v); r.c++; return r }
func (r row) bool(v bool) row  { put(r, r.col(mapping.TypeBoolean), v); r.c++; return r }

// str is a VARCHAR value. DuckDB copies the bytes: they are lent, not copied
// into a Go slice first.
func (r row) str(s string) row {
	if c := r.col(mapping.TypeVarchar); c != nil {
		s = utf8Text(s)
		mapping.VectorAssignStringElementLen(c.vec, mapping.IdxT(r.t.n), unsafe.Slice(unsafe.StringData(s), len(s)))
	}
	r.c++
	return r
}

// utf8Text is s if it is UTF-8, else s encoded as text. DuckDB stores a
// VARCHAR that is not UTF-8 as NULL: the name would be lost. Names are
// encoded where they are read (event.EncodeText), so this changes nothing
// unless a reader forgot; then the name is kept, as that reader should have
// kept it.
func utf8Text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return event.EncodeText(s)
}

// strOrNull is s, or NULL when not ok.
func (r row) strOrNull(s string, ok bool) row {
	if !ok {
		return r.null(mapping.TypeVarchar)
	}
	return r.str(s)
}

func (r row) blob(b []byte) row {
	if c := r.col(mapping.TypeBlob); c != nil {
		mapping.VectorAssignStringElementLen(c.vec, mapping.IdxT(r.t.n), b)
	}
	r.c++
	return r
}

// null is NULL in a column of type typ.
func (r row) null(typ mapping.Type) row {
	if c := r.col(typ); c != nil {
		if c.validity == nil {
			mapping.VectorEnsureValidityWritable(c.vec)
			c.validity = mapping.VectorGetValidity(c.vec)
		}
		mapping.ValiditySetRowInvalid(c.validity, mapping.IdxT(r.t.n))
		// The slot still holds the previous chunk's value (a string's
		// pointer into a freed heap): nothing should read it, but an empty
		// value costs nothing.
		w := vectorTypes[typ].width
		clear(unsafe.Slice((*byte)(unsafe.Add(c.data, uintptr(r.t.n)*w)), w))
	}
	r.c++
	return r
}

// vectorTypes are the column types the schema uses: their SQL names, and
// the bytes of one value in a vector.
var vectorTypes = map[mapping.Type]struct {
	name  string
	width uintptr
}{
	mapping.TypeBoolean: {"BOOLEAN", 1}, mapping.TypeUTinyInt: {"UTINYINT", 1}, mapping.TypeUSmallInt: {"USMALLINT", 2},
	mapping.TypeSmallInt: {"SMALLINT", 2}, mapping.TypeUInteger: {"UINTEGER", 4}, mapping.TypeInteger: {"INTEGER", 4},
	mapping.TypeUBigInt: {"UBIGINT", 8}, mapping.TypeBigInt: {"BIGINT", 8}, mapping.TypeVarchar: {"VARCHAR", 16},
	mapping.TypeBlob: {"BLOB", 16}, mapping.TypeList: {"LIST", 16},
}

func typeName(t mapping.Type) string {
	if v, ok := vectorTypes[t]; ok {
		return v.name
	}
	return fmt.Sprintf("type %d", t)
}

// list starts a list value of n elements of type elem: it returns the
// column and the offset of its first element in the child vector.
func (r row) list(elem mapping.Type, n int) (*column, mapping.IdxT) {
	c := r.col(mapping.TypeList)
	if c == nil {
		return nil, 0
	}
	if c.childTyp != elem {
		r.t.misuse(fmt.Errorf("column %d is %s[], written as %s[]", r.c+1, typeName(c.childTyp), typeName(elem)))
		return nil, 0
	}
	off := mapping.ListVectorGetSize(c.vec)
	mapping.ListVectorReserve(c.vec, off+mapping.IdxT(n))
	put(r, c, mapping.NewListEntry(uint64(off), uint64(n)))
	return c, off
}

// strs is a VARCHAR[] value.
func (r row) strs(v []string) row {
	if c, off := r.list(mapping.TypeVarchar, len(v)); c != nil {
		for i, s := range v {
			s = utf8Text(s)
			mapping.VectorAssignStringElementLen(c.child, off+mapping.IdxT(i), unsafe.Slice(unsafe.StringData(s), len(s)))
		}
		mapping.ListVectorSetSize(c.vec, off+mapping.IdxT(len(v)))
	}
	r.c++
	return r
}

// u64s is a UBIGINT[] value.
func (r row) u64s(v []uint64) row {
	if c, off := r.list(mapping.TypeUBigInt, len(v)); c != nil {
		if len(v) > 0 {
			data := mapping.VectorGetData(c.child) // reserving may have moved it
			copy(unsafe.Slice((*uint64)(unsafe.Add(data, uintptr(off)*8)), len(v)), v)
		}
		mapping.ListVectorSetSize(c.vec, off+mapping.IdxT(len(v)))
	}
	r.c++
	return r
}

// end adds the row to the chunk, and a full chunk to the appender.
func (r row) end() error {
	t := r.t
	if w := t.wrong; w != nil && w.col >= len(t.cols) {
		t.misuse(fmt.Errorf("a value for column %d of %d", w.col+1, len(t.cols)))
	} else if w != nil {
		t.misuse(fmt.Errorf("column %d is %s, written as %s", w.col+1, typeName(t.cols[w.col].typ), typeName(w.typ)))
	} else if r.c != len(t.cols) {
		t.misuse(fmt.Errorf("%d values for %d columns", r.c, len(t.cols)))
	}
	if t.err != nil {
		return t.err
	}
	t.n++
	t.rows++
	if t.n == t.size {
		return t.appendChunk()
	}
	return nil
}
