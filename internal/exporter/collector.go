// Package exporter adds whyslow's live frames into Prometheus counters and
// histograms with bounded label sets (docs/metrics.md).
package exporter

import (
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/live"
)

// GroupBy names what a process group is.
type GroupBy string

const (
	ByCgroup GroupBy = "cgroup"
	ByComm   GroupBy = "comm"
)

// Options shape the label sets.
type Options struct {
	GroupBy GroupBy
	// Groups and Devices are how many get a label value of their own; the
	// rest are summed under "other".
	Groups, Devices int
	// Every is the frame length, for the health gauge.
	Every time.Duration
}

// Collector is a prometheus.Collector over the frames added to it.
type Collector struct {
	mu      sync.Mutex
	opts    Options
	groups  *labels
	devices *labels
	byGroup map[string]*groupTotals
	byDev   map[string]*devTotals
	events  map[string]uint64
	lost    map[string]uint64
	info    live.Info
	last    time.Time
	frames  uint64
}

type groupTotals struct {
	cpu, throttle        float64
	wait                 map[event.Reason]float64
	dirtied, writtenBack float64
}

type devTotals struct {
	ops [2]opTotals // read, write
}

type opTotals struct {
	requests, bytes float64
	count           uint64
	sum             float64
	buckets         []uint64 // not cumulative; one per bound, and one past the last
}

// Bounds are the block latency histogram's upper bounds in seconds:
// 100 us doubling to 6.5536 s.
var Bounds = func() []float64 {
	out := make([]float64, 17)
	for i := range out {
		out[i] = 0.0001 * math.Pow(2, float64(i))
	}
	return out
}()

var ops = [2]string{"read", "write"}

// New returns a collector with nothing counted yet.
func New(o Options) *Collector {
	return &Collector{opts: o, groups: newLabels(o.Groups), devices: newLabels(o.Devices),
		byGroup: map[string]*groupTotals{Other: newGroupTotals()}, byDev: map[string]*devTotals{},
		events: map[string]uint64{}, lost: map[string]uint64{}}
}

func newGroupTotals() *groupTotals { return &groupTotals{wait: map[event.Reason]float64{}} }

// SetInfo records what the capture said of itself.
func (c *Collector) SetInfo(i live.Info) {
	c.mu.Lock()
	c.info = i
	c.mu.Unlock()
}

// groupKey is the group a process belongs to.
func (c *Collector) groupKey(p *live.Proc) string {
	k := p.Comm
	if c.opts.GroupBy == ByCgroup {
		k = p.Cgroup
		if k == "" {
			k = "unknown" // exited before its cgroup could be read
		}
	}
	if k == Other {
		k = "_" + Other // a process or cgroup really called "other"
	}
	return k
}

// Add counts one frame.
func (c *Collector) Add(f *live.Frame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames++
	c.last = time.Now()

	activity := map[string]float64{}
	for _, p := range f.Procs {
		activity[c.groupKey(p)] += float64(p.Lost()+p.CPU) / 1e9
	}
	for _, k := range c.groups.update(activity) {
		delete(c.byGroup, k)
	}
	for _, p := range f.Procs {
		g := c.group(c.groups.of(c.groupKey(p)))
		g.cpu += float64(p.CPU) / 1e9
		for r, ns := range p.Wait {
			g.wait[r] += float64(ns) / 1e9
		}
		g.throttle += float64(p.Throttled) / 1e9
		g.dirtied += float64(p.Dirtied)
		g.writtenBack += float64(p.WrittenBack)
	}

	devActivity := map[string]float64{}
	for _, d := range f.Devices {
		devActivity[d.Name] += float64(d.Reads + d.Writes)
	}
	for _, k := range c.devices.update(devActivity) {
		delete(c.byDev, k)
	}
	for _, d := range f.Devices {
		t := c.byDev[c.devices.of(d.Name)]
		if t == nil {
			t = &devTotals{}
			c.byDev[c.devices.of(d.Name)] = t
		}
		t.ops[0].add(d.Reads, d.ReadBytes, d.ReadLatencies)
		t.ops[1].add(d.Writes, d.WriteBytes, d.WriteLatencies)
	}

	for k, n := range f.Events {
		c.events[k] += n
	}
	for k, n := range f.Lost {
		c.lost[k] = n // the engine's counters are cumulative already
	}
}

func (c *Collector) group(label string) *groupTotals {
	g := c.byGroup[label]
	if g == nil {
		g = newGroupTotals()
		c.byGroup[label] = g
	}
	return g
}

func (o *opTotals) add(n, bytes uint64, lat []uint64) {
	if o.buckets == nil {
		o.buckets = make([]uint64, len(Bounds)+1)
	}
	o.requests += float64(n)
	o.bytes += float64(bytes)
	for _, ns := range lat {
		s := float64(ns) / 1e9
		o.count++
		o.sum += s
		i := 0
		for i < len(Bounds) && s > Bounds[i] {
			i++
		}
		o.buckets[i]++
	}
}

var (
	descWait = prometheus.NewDesc("whyslow_wait_seconds_total",
		"Time threads of a process group spent off CPU, by reason (runqueue: runnable, waiting for a CPU).",
		[]string{"group", "reason"}, nil)
	descCPU = prometheus.NewDesc("whyslow_cpu_seconds_total",
		"Time threads of a process group spent on a CPU.", []string{"group"}, nil)
	descThrottle = prometheus.NewDesc("whyslow_dirty_throttle_seconds_total",
		"Pauses balance_dirty_pages imposed on a process group for dirtying pages faster than the disk writes them.",
		[]string{"group"}, nil)
	descDirtied = prometheus.NewDesc("whyslow_dirtied_bytes_total",
		"Page cache a process group dirtied.", []string{"group"}, nil)
	descWriteback = prometheus.NewDesc("whyslow_writeback_bytes_total",
		"Data the kernel's flushers wrote back, attributed to the process group that dirtied it.",
		[]string{"group"}, nil)
	descRequests = prometheus.NewDesc("whyslow_block_requests_total",
		"Block requests completed, by device and direction.", []string{"device", "op"}, nil)
	descBytes = prometheus.NewDesc("whyslow_block_bytes_total",
		"Bytes of block requests completed, by device and direction.", []string{"device", "op"}, nil)
	descAwait = prometheus.NewDesc("whyslow_block_await_seconds",
		"Block request latency from entering the queue to completion (iostat's await), by device and direction.",
		[]string{"device", "op"}, nil)
	descEvents = prometheus.NewDesc("whyslow_events_total",
		"Events the capture decoded, by kind.", []string{"kind"}, nil)
	descLost = prometheus.NewDesc("whyslow_lost_events_total",
		"Events the kernel side could not deliver (ring buffer full, map full), by source: every metric may be short when this grows.",
		[]string{"source"}, nil)
	descUp = prometheus.NewDesc("whyslow_capture_up",
		"1 while capture delivers frames (the last one is less than three intervals old).", nil, nil)
	descInfo = prometheus.NewDesc("whyslow_capture_info",
		"The capture's program type (tp_btf or raw_tp); always 1.", []string{"flavour"}, nil)
	descMissing = prometheus.NewDesc("whyslow_capture_missing_tracepoints",
		"Tracepoints this kernel lacks: the evidence they give is missing.", nil, nil)
	descFrames = prometheus.NewDesc("whyslow_frames_total",
		"Intervals counted into these metrics.", nil, nil)
)

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWait, descCPU, descThrottle, descDirtied, descWriteback, descRequests,
		descBytes, descAwait, descEvents, descLost, descUp, descInfo, descMissing, descFrames} {
		ch <- d
	}
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	send := func(d *prometheus.Desc, t prometheus.ValueType, v float64, lv ...string) {
		m, err := prometheus.NewConstMetric(d, t, v, lv...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	for g, t := range c.byGroup {
		for _, r := range event.Reasons {
			if r == event.ReasonCPU || r.Derived() {
				continue // its own metric; none in the live view
			}
			send(descWait, prometheus.CounterValue, t.wait[r], g, string(r))
		}
		send(descCPU, prometheus.CounterValue, t.cpu, g)
		send(descThrottle, prometheus.CounterValue, t.throttle, g)
		send(descDirtied, prometheus.CounterValue, t.dirtied, g)
		send(descWriteback, prometheus.CounterValue, t.writtenBack, g)
	}
	for dev, t := range c.byDev {
		for i, op := range ops {
			o := &t.ops[i]
			send(descRequests, prometheus.CounterValue, o.requests, dev, op)
			send(descBytes, prometheus.CounterValue, o.bytes, dev, op)
			buckets := make(map[float64]uint64, len(Bounds))
			var cum uint64
			for j, b := range Bounds {
				if o.buckets != nil {
					cum += o.buckets[j]
				}
				buckets[b] = cum
			}
			h, err := prometheus.NewConstHistogram(descAwait, o.count, o.sum, buckets, dev, op)
			if err != nil {
				h = prometheus.NewInvalidMetric(descAwait, err)
			}
			ch <- h
		}
	}
	for k, n := range c.events {
		send(descEvents, prometheus.CounterValue, float64(n), k)
	}
	for k, n := range c.lost {
		send(descLost, prometheus.CounterValue, float64(n), k)
	}
	up := 0.0
	if !c.last.IsZero() && time.Since(c.last) < 3*c.opts.Every {
		up = 1
	}
	send(descUp, prometheus.GaugeValue, up)
	if c.info.Flavour != "" {
		send(descInfo, prometheus.GaugeValue, 1, c.info.Flavour)
	}
	send(descMissing, prometheus.GaugeValue, float64(len(c.info.Missing)))
	send(descFrames, prometheus.CounterValue, float64(c.frames))
}
