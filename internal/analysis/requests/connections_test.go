package requests

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// everyAnalysis runs each analysis on s, this package's, explain's and
// reports', and returns its answers as JSON, by name.
func everyAnalysis(s *explain.Source) map[string]func() (any, error) {
	pid, _ := strconv.Atoi(s.Meta["target_pid"])
	f := source.NoFilter()
	return map[string]func() (any, error){
		"explain":  func() (any, error) { return explain.Explain(s, uint32(pid)) },
		"requests": func() (any, error) { return Find(s, Options{Filter: f, Explained: 5}) },
		"usage":    func() (any, error) { return reports.RunUsage(s.Source, f) },
		"stats":    func() (any, error) { return reports.RunStats(s.Source, f) },
		"freq":     func() (any, error) { return reports.RunFreq(s.Source, f, 20) },
		"top":      func() (any, error) { return reports.RunTop(s.Source, f) },
		"log":      func() (any, error) { return reports.RunLog(s.Source, f, 0) },
		"stacks":   func() (any, error) { return reports.Stacks(s.Source, reports.StackOptions{OffCPU: true, OnCPU: true}) },
		"series":   func() (any, error) { return reports.TimeSeries(s.Source, 40) },
		"timeline": func() (any, error) {
			x, err := explain.Explain(s, uint32(pid))
			if err != nil {
				return nil, err
			}
			return explain.ThreadTimeline(s, x, 24)
		},
	}
}

// answer is what run answered, as JSON, or its refusal: requests of a
// recording without socket calls (ErrNoSocketCalls), no other.
func answer(run func() (any, error)) (string, error) {
	v, err := run()
	if errors.Is(err, ErrNoSocketCalls) {
		return "refused: " + err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return storetest.RoundFloats(string(b)), err
}

// TestAnalysesAtOnce: analyses run at once on one Source, over a pool of
// several connections, answer as they do one at a time. Each builds its
// temporary tables (target_offcpu, usage_io, stream_durs...) on the
// connection it holds: were one to read them through another, it would
// find none (no idle connection is kept, so none carries a table over), or
// another run's. Run under -race, it also checks the Source's shared state.
func TestAnalysesAtOnce(t *testing.T) {
	for _, st := range storetest.Stories {
		t.Run(st.Name, func(t *testing.T) {
			rec, err := store.Open(st.Record(t))
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Close()
			// As many connections as the runs ask for (a query outside the
			// one a run holds would then fail, not wait for a free one), and
			// none kept idle: a connection given back is closed, its
			// temporary tables with it.
			rec.DB.SetMaxOpenConns(0)
			rec.DB.SetMaxIdleConns(0)
			s := explain.NewSource(rec)
			want := map[string]string{}
			for name, run := range everyAnalysis(s) {
				if want[name], err = answer(run); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			for range 2 {
				for name, run := range everyAnalysis(s) {
					wg.Go(func() {
						got, err := answer(run)
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							t.Errorf("%s, at once with the others: %v", name, err)
						} else if got != want[name] {
							t.Errorf("%s, at once with the others, answered\n%s\nalone\n%s", name, got, want[name])
						}
					})
				}
			}
			wg.Wait()
		})
	}
}

// TestReleaseDropsTemporaryTables: an analysis leaves none of its
// temporary tables on the connection it gives back to the pool (the derived
// ones every connection is made with stay: store.IsDerived).
func TestReleaseDropsTemporaryTables(t *testing.T) {
	rec, err := store.Open(storetest.Stories[0].Record(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	rec.DB.SetMaxOpenConns(1) // the same connection, given back and taken again
	s := explain.NewSource(rec)
	for name, run := range everyAnalysis(s) {
		run()
		var n int
		if err := rec.DB.QueryRow("SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name NOT IN ('wait_reasons', 'socket_users')").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s left %d temporary tables on its connection", name, n)
		}
	}
}
