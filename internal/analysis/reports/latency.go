package reports

import (
	"database/sql"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// ClassStats is iolatencystats for one syscall class.
type ClassStats struct {
	Class   string  `json:"class"`
	Count   uint64  `json:"count"`
	MinNS   uint64  `json:"min_ns"`
	AvgNS   float64 `json:"avg_ns"`
	P50NS   uint64  `json:"p50_ns"`
	P90NS   uint64  `json:"p90_ns"`
	P99NS   uint64  `json:"p99_ns"`
	MaxNS   uint64  `json:"max_ns"`
	StdevNS float64 `json:"stdev_ns"`
	// Approximate: some calls were aggregated in the kernel (default level);
	// their percentiles come from log2 buckets, min and stdev from the streamed ones.
	Approximate bool `json:"approximate"`
}

// DiskStats is block latency for one device, queue and service apart.
type DiskStats struct {
	Device   string  `json:"device"`
	Requests uint64  `json:"requests"`
	QueueAvg float64 `json:"queue_avg_ns"`
	QueueMax uint64  `json:"queue_max_ns"`
	ServAvg  float64 `json:"service_avg_ns"`
	ServP99  uint64  `json:"service_p99_ns"`
	ServMax  uint64  `json:"service_max_ns"`
}

type Stats struct {
	Syscalls []ClassStats `json:"syscalls"`
	Disks    []DiskStats  `json:"disks"`
}

// RunStats computes latency statistics per class and per disk.
func RunStats(s *source.Source, f source.Filter) (*Stats, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	where, args := whereOf(f, rawCols)
	out := &Stats{}
	// Streamed calls, on the numeric table.
	rows, err := s.Query(sqlWhere("stats_calls", where), args...)
	if err != nil {
		return nil, fmt.Errorf("computing latency stats: %w", err)
	}
	byClass := map[string]*ClassStats{}
	for rows.Next() {
		c := &ClassStats{}
		if err := rows.Scan(&c.Class, &c.Count, &c.MinNS, &c.AvgNS, &c.MaxNS, &c.StdevNS); err != nil {
			rows.Close()
			return nil, err
		}
		byClass[c.Class] = c
	}
	rows.Close()
	if err := streamedDurations(s, f); err != nil {
		return nil, err
	}
	if err := quantiles(s, byClass); err != nil {
		return nil, err
	}
	if err := mergeTotals(s, f, byClass); err != nil {
		return nil, err
	}
	for _, c := range byClass {
		out.Syscalls = append(out.Syscalls, *c)
	}
	sort.Slice(out.Syscalls, func(i, j int) bool {
		a, b := out.Syscalls[i], out.Syscalls[j]
		return a.Count > b.Count || a.Count == b.Count && a.Class < b.Class
	})

	dwhere, dargs := whereOf(f, diskCols)
	rows, err = s.Query(sqlWhere("stats_disks", dwhere), dargs...)
	if err != nil {
		return nil, fmt.Errorf("computing disk stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d DiskStats
		if err := rows.Scan(&d.Device, &d.Requests, &d.QueueAvg, &d.QueueMax, &d.ServAvg, &d.ServP99, &d.ServMax); err != nil {
			return nil, err
		}
		out.Disks = append(out.Disks, d)
	}
	return out, nil
}

// streamedDurations makes the temp table stream_durs: the streamed calls
// under f, counted per class and duration. Durations repeat (the clock's
// steps, calls alike), so it is small, and quantiles, ranges and histograms
// read it instead of sorting or scanning every call again.
func streamedDurations(s *source.Source, f source.Filter) error {
	where, args := whereOf(f, rawCols)
	if _, err := s.Exec(sqlWhere("stream_durs", where), args...); err != nil {
		return fmt.Errorf("counting call durations: %w", err)
	}
	return nil
}

// quantiles fills p50, p90 and p99 of each class from stream_durs, as
// DuckDB's quantile_disc picks them: the value at index
// max(1, n - floor(n - n*q)) - 1 of the sorted durations.
func quantiles(s *source.Source, byClass map[string]*ClassStats) error {
	rows, err := s.Query(sqlOf("stream_quantiles"))
	if err != nil {
		return fmt.Errorf("computing latency quantiles: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var class string
		var p50, p90, p99 uint64
		if err := rows.Scan(&class, &p50, &p90, &p99); err != nil {
			return err
		}
		if c := byClass[class]; c != nil {
			c.P50NS, c.P90NS, c.P99NS = p50, p90, p99
		}
	}
	return rows.Err()
}

// totalsWhere filters the kernel's aggregates like f filters streamed calls,
// except for per-call latency and size, which aggregates do not have.
func totalsWhere(f source.Filter) (string, []any) {
	tf := f
	tf.Min, tf.Max, tf.MinSize, tf.MaxSize, tf.FileGlob = 0, 0, -1, -1, ""
	where, args := whereOf(tf, cols{ts: "ts", end: "last_ts", pid: "pid", tid: "tid", comm: "comm"})
	if f.FileGlob != "" {
		where += " AND (dev, ino, gen) IN (SELECT dev, ino, gen FROM file_names WHERE path GLOB ?)"
		args = append(args, f.FileGlob)
	}
	return where, args
}

// mergeTotals folds the kernel's aggregates (default level) into the stats:
// counts, means and maxima exactly, percentiles from log2 buckets.
func mergeTotals(s *source.Source, f source.Filter, byClass map[string]*ClassStats) error {
	where, args := totalsWhere(f)
	rows, err := s.Query(sqlWhere("totals_by_class", where), args...)
	if err != nil {
		return fmt.Errorf("reading aggregates: %w", err)
	}
	type sums struct {
		class            string
		count, total, mx float64
	}
	var all []sums
	for rows.Next() {
		var t sums
		if err := rows.Scan(&t.class, &t.count, &t.total, &t.mx); err != nil {
			rows.Close()
			return err
		}
		all = append(all, t)
	}
	rows.Close()
	// Each class's histogram after the rows are read: a query while they are
	// open would run on another connection, without this one's temp tables.
	for _, t := range all {
		class, count, total, mx := t.class, t.count, t.total, t.mx
		c := byClass[class]
		if c == nil {
			c = &ClassStats{Class: class}
			byClass[class] = c
		}
		sum := float64(total) + c.AvgNS*float64(c.Count)
		c.Count += uint64(count)
		c.AvgNS = sum / float64(c.Count)
		c.MaxNS = max(c.MaxNS, uint64(mx))
		slots := histogram(s, f, class)
		q := func(p float64) uint64 { return min(bucketQuantile(slots[:], p), c.MaxNS) }
		c.P50NS, c.P90NS, c.P99NS = q(0.5), q(0.9), q(0.99)
		for i, n := range slots {
			if n > 0 {
				if low := uint64(1) << uint(i); c.MinNS == 0 || low < c.MinNS {
					c.MinNS = low
				}
				break
			}
		}
		c.StdevNS = -1 // not known for calls counted in the kernel
		c.Approximate = true
	}
	return nil
}

// bucketQuantile returns the upper bound of the log2 bucket holding quantile q.
func bucketQuantile(slots []uint64, q float64) uint64 {
	var total uint64
	for _, n := range slots {
		total += n
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, n := range slots {
		seen += n
		if seen >= want {
			return uint64(1) << uint(i+1)
		}
	}
	return 0
}

// Bucket is one histogram bar.
type Bucket struct {
	LowNS  uint64 `json:"low_ns"`
	HighNS uint64 `json:"high_ns"`
	Count  uint64 `json:"count"`
}

// Freq is iolatencyfreq for one class: linear buckets (streamed calls) and log2 buckets (all).
type Freq struct {
	Class  string   `json:"class"`
	Linear []Bucket `json:"linear"`
	Log2   []Bucket `json:"log2"`
}

// MaxFreqResolution is the most linear buckets RunFreq draws.
const MaxFreqResolution = 1000

// ErrFreqResolution is RunFreq refusing a number of buckets: the caller's
// mistake, where any other error of RunFreq is the recording's.
var ErrFreqResolution = fmt.Errorf("--freq-resolution must be 1..%d", MaxFreqResolution)

// RunFreq builds latency histograms per class with n linear buckets between
// f.Min and f.Max (the observed range when unset).
func RunFreq(s *source.Source, f source.Filter, n int) ([]Freq, error) {
	if n <= 0 || n > MaxFreqResolution {
		return nil, ErrFreqResolution
	}
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	if err := streamedDurations(s, f); err != nil {
		return nil, err
	}
	rows, err := s.Query(sqlOf("stream_ranges"))
	if err != nil {
		return nil, fmt.Errorf("finding latency ranges: %w", err)
	}
	type rng struct {
		class  string
		lo, hi uint64
	}
	var ranges []rng
	for rows.Next() {
		var r rng
		if err := rows.Scan(&r.class, &r.lo, &r.hi); err != nil {
			rows.Close()
			return nil, err
		}
		if f.Min > 0 {
			r.lo = uint64(f.Min)
		}
		if f.Max > 0 {
			r.hi = uint64(f.Max)
		}
		ranges = append(ranges, r)
	}
	rows.Close()
	var out []Freq
	for _, r := range ranges {
		fr := Freq{Class: r.class}
		width := max((r.hi-r.lo+uint64(n)-1)/uint64(n), 1)
		counts := make([]uint64, n)
		brows, err := s.Query(sqlOf("stream_linear"), r.lo, width, n-1, r.class, r.lo, r.hi)
		if err != nil {
			return nil, fmt.Errorf("building histogram: %w", err)
		}
		for brows.Next() {
			var b int
			var c uint64
			if brows.Scan(&b, &c) == nil && b >= 0 && b < n {
				counts[b] = c
			}
		}
		brows.Close()
		for i, c := range counts {
			fr.Linear = append(fr.Linear, Bucket{LowNS: r.lo + uint64(i)*width, HighNS: r.lo + uint64(i+1)*width, Count: c})
		}
		fr.Log2 = log2Buckets(s, f, r.class)
		out = append(out, fr)
	}
	return out, nil
}

// histogram counts calls of a class in log2(ns) buckets: streamed calls (from
// stream_durs, which the caller made) and, unless a latency bound excludes
// them, the kernel's aggregates.
func histogram(s *source.Source, f source.Filter, class string) [64]uint64 {
	var slots [64]uint64
	rows, err := s.Query(sqlOf("stream_log2"), class)
	if err == nil {
		for rows.Next() {
			var b int
			var c uint64
			if rows.Scan(&b, &c) == nil && b >= 0 && b < 64 {
				slots[b] += c
			}
		}
		rows.Close()
	}
	if f.Min != 0 || f.Max != 0 || f.MinSize >= 0 || f.MaxSize >= 0 {
		return slots
	}
	twhere, targs := totalsWhere(f)
	trows, err := s.Query(sqlWhere("totals_slots", twhere), append([]any{class}, targs...)...)
	if err != nil {
		return slots
	}
	defer trows.Close()
	for trows.Next() {
		var sl []any
		if trows.Scan(&sl) == nil {
			for i, v := range sl {
				if n, ok := v.(uint64); ok && i < 64 {
					slots[i] += n
				}
			}
		}
	}
	return slots
}

func log2Buckets(s *source.Source, f source.Filter, class string) []Bucket {
	slots := histogram(s, f, class)
	lo, hi := 64, -1
	for i, c := range slots {
		if c > 0 {
			lo, hi = min(lo, i), max(hi, i)
		}
	}
	var out []Bucket
	for i := lo; i <= hi; i++ {
		out = append(out, Bucket{LowNS: 1 << uint(i), HighNS: 1 << uint(i+1), Count: slots[i]})
	}
	return out
}

// Op is one I/O operation, as top and log list them.
type Op struct {
	Begin   uint64    `json:"begin_ns"`
	End     uint64    `json:"end_ns"`
	BeginAt time.Time `json:"begin"`
	EndAt   time.Time `json:"end"`
	DurNS   uint64    `json:"duration_ns"`
	Class   string    `json:"class"`
	Syscall string    `json:"syscall"`
	Size    *int64    `json:"size"`
	Comm    string    `json:"comm"`
	PID     uint32    `json:"pid"`
	TID     uint32    `json:"tid"`
	FD      int32     `json:"fd"`
	Path    string    `json:"path"`
	Ret     int64     `json:"ret"`
	Outside bool      `json:"outside_range"` // began or ended outside the selected range (* in text)
}

// RunTop lists the slowest streamed operations per class.
func RunTop(s *source.Source, f source.Filter) (map[string][]Op, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	where, args := whereOf(f, rawCols)
	ops, err := queryOps(s, f, sqlWhere("top_calls", where), append([]any{f.Limit}, args...))
	if err != nil {
		return nil, err
	}
	out := map[string][]Op{}
	for _, o := range ops {
		out[o.Class] = append(out[o.Class], o)
	}
	return out, nil
}

// RunLog lists streamed operations in time order (StreamLog, kept).
func RunLog(s *source.Source, f source.Filter, limit int) ([]Op, error) {
	var out []Op
	err := StreamLog(s, f, limit, func(o *Op) error {
		c := *o
		if o.Size != nil {
			size := *o.Size
			c.Size = &size
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

func queryOps(s *source.Source, f source.Filter, q string, args []any) ([]Op, error) {
	rows, err := s.Query(q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing operations: %w", err)
	}
	defer rows.Close()
	var out []Op
	for rows.Next() {
		var o Op
		var fd sql.NullInt32
		var ret sql.NullInt64
		var rn int64
		if err := rows.Scan(&o.Begin, &o.End, &o.DurNS, &o.Class, &o.Syscall, &ret, &o.Comm, &o.PID, &o.TID, &fd, &o.Path, &rn); err != nil {
			return nil, err
		}
		o.FD, o.Ret = fd.Int32, ret.Int64
		if event.SyscallMovesBytes(o.Syscall) && o.Ret >= 0 {
			size := o.Ret
			o.Size = &size
		}
		o.BeginAt, o.EndAt = s.Clock.Wall(o.Begin), s.Clock.Wall(o.End)
		o.Outside = (f.Begin != 0 && o.Begin < f.Begin) || (f.End != 0 && o.End > f.End)
		out = append(out, o)
	}
	return out, nil
}
