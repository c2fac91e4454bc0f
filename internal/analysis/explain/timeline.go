package explain

import (
	"database/sql"
	"fmt"
	"sort"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// Timeline is what each of the busiest threads of the target did over its
// wall time: on CPU, off CPU by reason, in the run queue.
type Timeline struct {
	// StartMono is the zero of the spans' times (the target's start).
	StartMono uint64           `json:"start_mono"`
	WallS     float64          `json:"wall_s"`
	Threads   []TimelineThread `json:"threads"`
	// Omitted counts threads left out (the least busy).
	Omitted int `json:"omitted"`
}

type TimelineThread struct {
	PID   uint32 `json:"pid"`
	TID   uint32 `json:"tid"`
	Comm  string `json:"comm"`
	Spans []Span `json:"spans"`
}

// Span is a stretch of one state; times are seconds from the start of the
// target's window, like the critical path's segments. A thread with more
// spans than a timeline can show is cut into equal buckets, each given the
// reason that took most of it.
type Span struct {
	BeginS float64 `json:"b"`
	DurS   float64 `json:"d"`
	Reason string  `json:"r"`
}

// maxSpans is how many spans a thread keeps before it is bucketed.
const maxSpans, timelineBuckets = 1500, 1000

// ThreadTimeline draws the timeline of the threads x accounted for, the
// busiest first, at most maxThreads of them.
func ThreadTimeline(s *Source, x *Explanation, maxThreads int) (*Timeline, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	win := s.Window()
	t := &Timeline{StartMono: win.Begin, WallS: float64(win.End-win.Begin) / 1e9}
	byTID := map[uint32]int{}
	for i, th := range x.Threads {
		if i == maxThreads {
			t.Omitted = len(x.Threads) - maxThreads
			break
		}
		byTID[th.TID] = len(t.Threads)
		t.Threads = append(t.Threads, TimelineThread{PID: th.PID, TID: th.TID, Comm: th.Comm})
	}
	if len(t.Threads) == 0 {
		return t, nil
	}
	tids := make([]uint32, 0, len(byTID))
	for tid := range byTID {
		tids = append(tids, tid)
	}
	life, err := s.lifetimes(tids, win)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(sqlOf("timeline_waits"), sql.Named("tids", tids),
		sql.Named("b", win.Begin), sql.Named("e", win.End))
	if err != nil {
		return nil, fmt.Errorf("reading waits for the timeline: %w", err)
	}
	defer rows.Close()
	type iv struct {
		a, z   uint64
		reason string
	}
	ivs := map[uint32][]iv{}
	last := map[uint32]uint64{}
	for rows.Next() {
		var tid uint32
		var a, z, runq uint64
		var reason string
		if err := rows.Scan(&tid, &a, &z, &runq, &reason); err != nil {
			return nil, err
		}
		a = max(a, last[tid], life[tid][0])
		if z <= a {
			continue
		}
		if prev := max(last[tid], life[tid][0]); a > prev {
			ivs[tid] = append(ivs[tid], iv{prev, a, string(event.ReasonCPU)})
		}
		woken := z - min(runq, z-a)
		ivs[tid] = append(ivs[tid], iv{a, woken, reason}, iv{woken, z, string(event.ReasonRunqueue)})
		last[tid] = z
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, tid := range tids {
		if end, from := life[tid][1], max(last[tid], life[tid][0]); end > from {
			ivs[tid] = append(ivs[tid], iv{from, end, string(event.ReasonCPU)})
		}
		var spans []Span
		for _, v := range ivs[tid] {
			if v.z > v.a {
				spans = append(spans, Span{BeginS: float64(v.a-win.Begin) / 1e9, DurS: float64(v.z-v.a) / 1e9, Reason: v.reason})
			}
		}
		if len(spans) > maxSpans {
			spans = bucketSpans(spans, t.WallS, timelineBuckets)
		}
		t.Threads[byTID[tid]].Spans = spans
	}
	return t, nil
}

// lifetimes are the spans of the window each thread lived in.
func (s *Source) lifetimes(tids []uint32, win source.Window) (map[uint32][2]uint64, error) {
	out := map[uint32][2]uint64{}
	for _, tid := range tids {
		out[tid] = [2]uint64{win.Begin, win.End}
	}
	rows, err := s.Query(sqlOf("thread_lifetimes"), sql.Named("tids", tids))
	if err != nil {
		return nil, fmt.Errorf("reading thread lifetimes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tid uint32
		var born, died sql.NullInt64
		if err := rows.Scan(&tid, &born, &died); err != nil {
			return nil, err
		}
		l := out[tid]
		if born.Valid && uint64(born.Int64) > l[0] && uint64(born.Int64) < l[1] {
			l[0] = uint64(born.Int64)
		}
		if died.Valid && uint64(died.Int64) < l[1] && uint64(died.Int64) > l[0] {
			l[1] = uint64(died.Int64)
		}
		out[tid] = l
	}
	return out, rows.Err()
}

// bucketSpans cuts [0, wall] into n buckets, gives each the reason that took
// most of it, and joins neighbours of one reason.
func bucketSpans(spans []Span, wall float64, n int) []Span {
	width := wall / float64(n)
	share := make([]map[string]float64, n)
	for _, sp := range spans {
		for i := max(int(sp.BeginS/width), 0); i < n && float64(i)*width < sp.BeginS+sp.DurS; i++ {
			lo, hi := max(float64(i)*width, sp.BeginS), min(float64(i+1)*width, sp.BeginS+sp.DurS)
			if hi > lo {
				if share[i] == nil {
					share[i] = map[string]float64{}
				}
				share[i][sp.Reason] += hi - lo
			}
		}
	}
	var out []Span
	for i, m := range share {
		if m == nil {
			continue
		}
		reasons := make([]string, 0, len(m))
		for r := range m {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(a, b int) bool {
			return m[reasons[a]] > m[reasons[b]] || m[reasons[a]] == m[reasons[b]] && reasons[a] < reasons[b]
		})
		top := reasons[0]
		if n := len(out); n > 0 && out[n-1].Reason == top && out[n-1].BeginS+out[n-1].DurS >= float64(i)*width-width/2 {
			out[n-1].DurS = float64(i+1)*width - out[n-1].BeginS
			continue
		}
		out = append(out, Span{BeginS: float64(i) * width, DurS: width, Reason: top})
	}
	return out
}
