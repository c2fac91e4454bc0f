package reports

import (
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// Series is what the storage did over the recording, in equal buckets:
// each device's throughput and the pages the page cache took in and wrote
// back. The kernel reports no dirty level, only what was dirtied and what
// was written back: the series are rates, not levels.
type Series struct {
	StartMono uint64         `json:"start_mono"`
	BucketS   float64        `json:"bucket_s"`
	Buckets   int            `json:"buckets"`
	Devices   []DeviceSeries `json:"devices"`
	// Pages dirtied and written back, per second, in each bucket.
	DirtiedPagesPerS []float64 `json:"dirtied_pages_per_s"`
	WrittenBackPerS  []float64 `json:"written_back_pages_per_s"`
}

// DeviceSeries is one block device's throughput in bytes per second.
type DeviceSeries struct {
	Name     string    `json:"name"`
	ReadBPS  []float64 `json:"read_bps"`
	WriteBPS []float64 `json:"write_bps"`
	// Util is the part of each bucket it had a request in flight (%util,
	// 0-1), from every request, not only those that moved data.
	Util []float64 `json:"util"`
}

// TimeSeries buckets the recording's storage activity; each amount is spread
// evenly over the span it took (a block request from issue to completion,
// pages dirtied between two drains, an inode's writeback).
func TimeSeries(s *source.Source, buckets int) (*Series, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	begin, end := s.Clock.StartMono, s.Clock.EndMono
	if buckets < 1 {
		buckets = 1
	}
	if end <= begin {
		end = begin + 1
	}
	width := float64(end-begin) / float64(buckets)
	out := &Series{StartMono: begin, BucketS: width / 1e9, Buckets: buckets,
		DirtiedPagesPerS: make([]float64, buckets), WrittenBackPerS: make([]float64, buckets)}
	// spread adds amount over [a, b] into xs, per second.
	spread := func(xs []float64, a, b uint64, amount float64) {
		a, b = max(a, begin), min(b, end)
		if b < a {
			return
		}
		if b == a {
			b = a + 1
		}
		rate := amount / float64(b-a) // per ns
		for i := int(float64(a-begin) / width); i < buckets; i++ {
			lo, hi := begin+uint64(float64(i)*width), begin+uint64(float64(i+1)*width)
			if lo >= b {
				break
			}
			xs[i] += rate * float64(min(b, hi)-max(a, lo)) / out.BucketS
		}
	}
	rows, err := s.Query(sqlOf("series_block"))
	if err != nil {
		return nil, fmt.Errorf("reading block requests: %w", err)
	}
	defer rows.Close()
	var dev *DeviceSeries
	for rows.Next() {
		var name, op string
		var a, b uint64
		var n float64
		if err := rows.Scan(&name, &op, &a, &b, &n); err != nil {
			return nil, err
		}
		if dev == nil || dev.Name != name {
			out.Devices = append(out.Devices, DeviceSeries{Name: name, ReadBPS: make([]float64, buckets), WriteBPS: make([]float64, buckets)})
			dev = &out.Devices[len(out.Devices)-1]
		}
		if a == 0 || a > b {
			a = b
		}
		if op == "read" {
			spread(dev.ReadBPS, a, b, n)
		} else {
			spread(dev.WriteBPS, a, b, n)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := busySeries(s, out, spread); err != nil {
		return nil, err
	}
	for _, q := range []struct {
		sql string
		to  []float64
	}{
		{sqlOf("series_dirtied"), out.DirtiedPagesPerS},
		{sqlOf("series_written_back"), out.WrittenBackPerS},
	} {
		if err := spreadRows(s, q.sql, func(a, b uint64, n float64) { spread(q.to, a, b, n) }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// busySeries fills each device's Util: the spans with a request in flight,
// overlapping requests joined, spread over the buckets in seconds per second.
func busySeries(s *source.Source, out *Series, spread func(xs []float64, a, b uint64, amount float64)) error {
	rows, err := s.Query(sqlOf("series_in_flight"))
	if err != nil {
		return fmt.Errorf("reading block requests: %w", err)
	}
	defer rows.Close()
	byName := map[string]*DeviceSeries{}
	for i := range out.Devices {
		byName[out.Devices[i].Name] = &out.Devices[i]
	}
	var dev *DeviceSeries
	var name string
	var from, to uint64 // the island being joined
	flush := func() {
		if dev != nil && to > from {
			spread(dev.Util, from, to, float64(to-from)/1e9)
		}
	}
	for rows.Next() {
		var n string
		var a, b uint64
		if err := rows.Scan(&n, &a, &b); err != nil {
			return err
		}
		if n != name || dev == nil {
			flush()
			name, from, to = n, a, b
			if dev = byName[n]; dev == nil {
				out.Devices = append(out.Devices, DeviceSeries{Name: n, ReadBPS: make([]float64, out.Buckets), WriteBPS: make([]float64, out.Buckets)})
				dev = &out.Devices[len(out.Devices)-1]
				byName = map[string]*DeviceSeries{} // the slice may have moved
				for i := range out.Devices {
					byName[out.Devices[i].Name] = &out.Devices[i]
				}
			}
			if dev.Util == nil {
				dev.Util = make([]float64, out.Buckets)
			}
			continue
		}
		if a > to {
			flush()
			from, to = a, b
			continue
		}
		to = max(to, b)
	}
	flush()
	for i := range out.Devices {
		if out.Devices[i].Util == nil {
			out.Devices[i].Util = make([]float64, out.Buckets)
		}
	}
	return rows.Err()
}

func spreadRows(s *source.Source, q string, add func(a, b uint64, n float64)) error {
	rows, err := s.Query(q)
	if err != nil {
		return fmt.Errorf("reading pages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, b uint64
		var n float64
		if err := rows.Scan(&a, &b, &n); err != nil {
			return err
		}
		add(a, b, n)
	}
	return rows.Err()
}
