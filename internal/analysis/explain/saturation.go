package explain

// Whether the device the target waited on was at its limit: the facts a
// storage verdict adds about the device (output words them).

// Saturation thresholds: a device busy this part of the target's storage
// waits with requests queued behind one another, or moving data at this
// part of its ceiling, was at its limit. Busy alone is not enough: a
// thread reading one block at a time keeps a device busy for all of its
// waits (%util near 100%) on a device that could serve many at once; only
// a queue (aqu-sz past one request and a half: more than the waiter's own)
// says requests waited for the device.
const (
	busyAtLimit    = 0.9
	queuedAtLimit  = 1.5
	ceilingAtLimit = 0.9
)

// CeilingKind names where a device's ceiling comes from.
type CeilingKind string

const (
	CeilingNone     CeilingKind = ""
	CeilingBlkio    CeilingKind = "blkio"    // the root blkio cgroup's throttle on the device
	CeilingCgroup   CeilingKind = "cgroup"   // the target's own cgroup's limit (IOLimit: blkio or io.max)
	CeilingBaseline CeilingKind = "baseline" // what `whyslow baseline` measured
)

// DeviceVerdict is the device most of the target's data went to, during its
// storage waits: how busy, how fast, against which ceiling.
type DeviceVerdict struct {
	Name  string  `json:"name"`
	Util  float64 `json:"util"` // the part of the waits it had a request in flight
	AquSz float64 `json:"aqu_sz"`
	// BPS is the rate of the direction the waits moved most (Write says
	// which), per second of the waits.
	BPS   float64 `json:"bytes_per_s"`
	Write bool    `json:"write"`
	// Ceiling: a throttle where there is one, else the baseline.
	Ceiling    CeilingKind `json:"ceiling"`
	CeilingBPS uint64      `json:"ceiling_bytes_per_s,omitempty"`
	// Saturated: busy ≥ 90% of the waits with a queue (aqu-sz ≥ 1.5), or
	// at ≥ 90% of its ceiling.
	Saturated bool `json:"saturated"`
	// Measured: `whyslow baseline` measured the device (the recording kept
	// it), whether or not it is the ceiling.
	Measured bool `json:"measured"`
}

// deviceVerdict judges the device that carried most of the target's data,
// among those busy while it waited on storage (nil: none).
func deviceVerdict(devs []DeviceUse, io *IOLimit) *DeviceVerdict {
	var d *DeviceUse
	for i := range devs {
		c := &devs[i]
		if c.Waits == nil || c.TargetBytes == 0 {
			continue
		}
		if d == nil || c.TargetBytes > d.TargetBytes {
			d = c
		}
	}
	if d == nil {
		return nil
	}
	w := d.Waits
	v := &DeviceVerdict{Name: d.Name, Util: w.Util, AquSz: w.AquSz, Write: w.WriteBPS >= w.ReadBPS, Measured: d.Baseline != nil}
	v.BPS = w.ReadBPS
	throttle, cgroup, base := d.ThrottleReadBPS, uint64(0), uint64(0)
	if io != nil && io.Device == d.Name {
		cgroup = io.ReadBPS
	}
	if d.Baseline != nil {
		base = d.Baseline.ReadBPS
	}
	if v.Write {
		v.BPS, throttle = w.WriteBPS, d.ThrottleWriteBPS
		cgroup, base = 0, 0
		if io != nil && io.Device == d.Name {
			cgroup = io.WriteBPS
		}
		if d.Baseline != nil {
			base = d.Baseline.WriteBPS
		}
	}
	switch {
	case throttle > 0 && (cgroup == 0 || throttle <= cgroup):
		v.Ceiling, v.CeilingBPS = CeilingBlkio, throttle
	case cgroup > 0:
		v.Ceiling, v.CeilingBPS = CeilingCgroup, cgroup
	case base > 0:
		v.Ceiling, v.CeilingBPS = CeilingBaseline, base
	}
	v.Saturated = v.Util >= busyAtLimit && v.AquSz >= queuedAtLimit || v.CeilingBPS > 0 && v.BPS >= ceilingAtLimit*float64(v.CeilingBPS)
	return v
}
