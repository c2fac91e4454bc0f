package reports

import (
	"errors"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestStreamLogStopsOnError: a caller's error (a closed pipe) ends the
// stream with that error, after no more calls, and nothing is left blocked.
func TestStreamLogStopsOnError(t *testing.T) {
	path := storetest.Stories[0].Record(t)
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	s := source.New(rec)
	var all int
	if err := StreamLog(s, source.NoFilter(), 0, func(*Op) error { all++; return nil }); err != nil || all == 0 {
		t.Fatalf("streaming the whole log: %v, %d ops", err, all)
	}
	closed := errors.New("broken pipe")
	var n int
	err = StreamLog(s, source.NoFilter(), 0, func(*Op) error {
		n++
		if n == 2 {
			return closed
		}
		return nil
	})
	if !errors.Is(err, closed) || n != 2 {
		t.Errorf("after the caller's error: %v, %d calls; want its error after 2", err, n)
	}
}
