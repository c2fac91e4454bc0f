package explain

import (
	"database/sql"
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/baseline"
	"github.com/whyslow/whyslow/internal/event"
)

// DeviceLoad is a device's columns as iostat -x shows them, over a window:
// requests completed in it, as /proc/diskstats counts them.
type DeviceLoad struct {
	Reads      uint64 `json:"reads"`
	Writes     uint64 `json:"writes"` // writes and write-zeroes
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
	// Per second of the window: r/s, w/s, rMB/s and wMB/s (in bytes).
	RPerS    float64 `json:"r_per_s"`
	WPerS    float64 `json:"w_per_s"`
	ReadBPS  float64 `json:"read_bytes_per_s"`
	WriteBPS float64 `json:"write_bytes_per_s"`
	// r_await and w_await: a request's time from insert to completion.
	RAwaitMS float64 `json:"r_await_ms"`
	WAwaitMS float64 `json:"w_await_ms"`
	// AquSz: requests in flight on average (aqu-sz).
	AquSz float64 `json:"aqu_sz"`
	// BusyS: the time with a request in flight; Util its part of the
	// window (%util, 0-1).
	BusyS float64 `json:"busy_s"`
	Util  float64 `json:"util"`
}

// DeviceDuringWaits is how a device did while the target waited on
// storage: whether it was at its limit then.
type DeviceDuringWaits struct {
	WaitS float64 `json:"wait_s"` // the target's storage waits, overlapping ones once
	BusyS float64 `json:"busy_s"` // of them, with a request of any issuer in flight
	Util  float64 `json:"util"`   // BusyS / WaitS
	// The bytes completed during them, per second of them.
	ReadBPS  float64 `json:"read_bytes_per_s"`
	WriteBPS float64 `json:"write_bytes_per_s"`
	AquSz    float64 `json:"aqu_sz"`
}

// Baseline is what `whyslow baseline` measured of a device (bytes/s, 0:
// not measured).
type Baseline struct {
	ReadBPS  uint64 `json:"read_bytes_per_s"`
	WriteBPS uint64 `json:"write_bytes_per_s"`
}

// devices: block I/O during the target's life, all issuers, with the target's
// own part; where requests waited: in the queue (inserted, not yet issued),
// at the device (issued to complete), and before either, in a blkio
// throttle that holds bios before they become requests, which await misses;
// iostat's columns; and how busy each device was during the target's
// storage waits.
func (x *Explanation) devices(s *Source, win source.Window) error {
	// Most short commands saw no request: the query below takes ~10 ms to plan.
	requests := s.EveryStep
	if !requests && s.HasRows("block_raw") {
		if err := s.QueryRow("SELECT EXISTS (SELECT 1 FROM block_raw WHERE ts BETWEEN ? AND ?)", win.Begin, win.End).Scan(&requests); err != nil {
			return fmt.Errorf("summing devices: %w", err)
		}
	}
	if !requests {
		return nil
	}
	for _, step := range []string{"device_requests", "device_islands"} {
		if err := s.run(step, sql.Named("b", win.Begin), sql.Named("e", win.End)); err != nil {
			return fmt.Errorf("summing devices: %w", err)
		}
	}
	devs, err := x.deviceUse(s)
	if err != nil {
		return err
	}
	waited := x.storageWaitS() > 0
	for i := range x.Devices {
		d := &x.Devices[i]
		if err := d.throttle(s, devs[i], win); err != nil {
			return err
		}
		if err := d.load(s, devs[i], win); err != nil {
			return err
		}
		if waited {
			if err := d.duringWaits(s, devs[i], win); err != nil {
				return err
			}
		}
		if r, w, ok := baseline.FromMeta(s.Meta, d.Name); ok {
			d.Baseline = &Baseline{ReadBPS: r, WriteBPS: w}
		}
	}
	return nil
}

// deviceUse reads each device's totals; it returns their dev_t, in order.
func (x *Explanation) deviceUse(s *Source) ([]uint32, error) {
	rows, err := s.Query(sqlOf("device_use"))
	if err != nil {
		return nil, fmt.Errorf("summing devices: %w", err)
	}
	defer rows.Close()
	var devs []uint32
	for rows.Next() {
		var d DeviceUse
		var dev uint32
		var r, w, disc, zero, tb sql.NullFloat64
		var await, queue, service sql.NullFloat64
		var lower sql.NullFloat64
		if err := rows.Scan(&d.Name, &dev, &r, &w, &disc, &zero, &d.Requests, &await, &queue, &service, &lower, &tb); err != nil {
			return nil, err
		}
		d.ReadBytes, d.WriteBytes, d.AwaitMS, d.TargetBytes = uint64(r.Float64), uint64(w.Float64), await.Float64, uint64(tb.Float64)
		d.DiscardBytes, d.ZeroedBytes, d.QueueMS, d.ServiceMS = uint64(disc.Float64), uint64(zero.Float64), queue.Float64, service.Float64
		d.StackedBytes = uint64(lower.Float64)
		x.Devices = append(x.Devices, d)
		devs = append(devs, dev)
	}
	return devs, rows.Err()
}

// storageWaitS is the target's time waiting on storage, all threads.
func (x *Explanation) storageWaitS() float64 {
	var sum float64
	for r, v := range x.Time.OffCPUS {
		if event.Reason(r).Disk() {
			sum += v
		}
	}
	return sum
}

// load fills iostat's columns over the window, of every issuer and of the
// target alone.
func (d *DeviceUse) load(s *Source, dev uint32, win source.Window) error {
	secs := float64(win.End-win.Begin) / 1e9
	for _, of := range []struct {
		target bool
		to     *DeviceLoad
	}{{false, &d.Load}, {true, &d.TargetLoad}} {
		l := of.to
		var queued, busy float64
		err := s.QueryRow(sqlOf("device_load"), sql.Named("dev", dev), sql.Named("target", of.target)).
			Scan(&l.Reads, &l.Writes, &l.ReadBytes, &l.WriteBytes, &l.RAwaitMS, &l.WAwaitMS, &queued, &busy)
		if err != nil {
			return fmt.Errorf("reading %s's load: %w", d.Name, err)
		}
		l.BusyS = busy / 1e9
		if secs > 0 {
			l.RPerS, l.WPerS = float64(l.Reads)/secs, float64(l.Writes)/secs
			l.ReadBPS, l.WriteBPS = float64(l.ReadBytes)/secs, float64(l.WriteBytes)/secs
			l.AquSz, l.Util = queued/1e9/secs, min(l.BusyS/secs, 1)
		}
	}
	return nil
}

// duringWaits fills how the device did while the target waited on storage.
func (d *DeviceUse) duringWaits(s *Source, dev uint32, win source.Window) error {
	var wait, busy, rb, wb, queued float64
	err := s.QueryRow(sqlOf("device_during_waits"), sql.Named("b", win.Begin), sql.Named("e", win.End), sql.Named("dev", dev)).
		Scan(&wait, &busy, &rb, &wb, &queued)
	if err != nil {
		return fmt.Errorf("reading %s during the target's waits: %w", d.Name, err)
	}
	if wait <= 0 {
		return nil
	}
	secs := wait / 1e9
	d.Waits = &DeviceDuringWaits{WaitS: secs, BusyS: busy / 1e9, Util: min(busy/wait, 1),
		ReadBPS: rb / secs, WriteBPS: wb / secs, AquSz: queued / wait}
	return nil
}
