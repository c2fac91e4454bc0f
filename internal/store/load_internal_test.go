package store

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRowWrittenWronglyIsAnError: a row's values are stored straight into
// DuckDB's vectors, so a value of another width than its column's would
// write past them. Such a row must be refused, and every later one, with an
// error that names the table and the column; the chunk keeps its good rows.
func TestRowWrittenWronglyIsAnError(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(r row) row
		want  string
	}{
		{"wrong type", func(r row) row { return r.str("x").u32(2) }, "loading lost: column 2 is UBIGINT, written as UINTEGER"},
		{"too few", func(r row) row { return r.str("x") }, "loading lost: 1 values for 2 columns"},
		{"too many", func(r row) row { return r.str("x").u64(1).u64(2) }, "loading lost: a value for column 3 of 2"},
		{"not a list", func(r row) row { return r.str("x").u64s([]uint64{1}) }, "loading lost: column 2 is UBIGINT, written as LIST"},
	} {
		w, err := Create(filepath.Join(t.TempDir(), "rec.db"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.t.lost.row().str("good").u64(1).end(); err != nil {
			t.Fatalf("%s: a good row: %v", c.name, err)
		}
		err = c.write(w.t.lost.row()).end()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if err2 := w.t.lost.row().str("after").u64(1).end(); err2 == nil {
			t.Errorf("%s: a row after the wrong one was taken", c.name)
		}
		if w.t.lost.n != 1 {
			t.Errorf("%s: %d rows in the chunk, want the good one", c.name, w.t.lost.n)
		}
		w.t.lost.err, w.t.lost.wrong = nil, nil // the good row still closes the recording
		if err := w.Close(nil); err != nil {
			t.Errorf("%s: closing: %v", c.name, err)
		}
	}
}

// TestListOfWrongElementsIsAnError: a list's elements go into the list's
// child vector, which must be of the elements' type.
func TestListOfWrongElementsIsAnError(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "rec.db"))
	if err != nil {
		t.Fatal(err)
	}
	err = w.t.stacks.row().i32(1).u64s([]uint64{1, 2}).end()
	if want := "loading stacks: column 2 is VARCHAR[], written as UBIGINT[]"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
	w.t.stacks.err, w.t.stacks.wrong = nil, nil
	if err := w.Close(nil); err != nil {
		t.Error(err)
	}
}
