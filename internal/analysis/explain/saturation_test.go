package explain

import "testing"

func TestDeviceVerdict(t *testing.T) {
	waits := func(util, aqu, r, w float64) *DeviceDuringWaits {
		return &DeviceDuringWaits{WaitS: 1, BusyS: util, Util: util, AquSz: aqu, ReadBPS: r, WriteBPS: w}
	}
	for _, c := range []struct {
		name      string
		dev       DeviceUse
		io        *IOLimit
		saturated bool
		ceiling   CeilingKind
	}{
		{"one reader, busy but no queue", DeviceUse{Name: "vda", TargetBytes: 1, Waits: waits(0.99, 1.0, 60e6, 0)}, nil, false, CeilingNone},
		{"busy with a queue", DeviceUse{Name: "sda", TargetBytes: 1, Waits: waits(0.97, 3.2, 0, 90e6)}, nil, true, CeilingNone},
		{"held at the blkio throttle, idle", DeviceUse{Name: "loop0", TargetBytes: 1, ThrottleWriteBPS: 8 << 20,
			Waits: waits(0.03, 0.03, 0, 8.1e6)}, nil, true, CeilingBlkio},
		{"below the throttle", DeviceUse{Name: "loop0", TargetBytes: 1, ThrottleWriteBPS: 8 << 20,
			Waits: waits(0.03, 0.03, 0, 2e6)}, nil, false, CeilingBlkio},
		{"the read throttle does not bound writes", DeviceUse{Name: "loop0", TargetBytes: 1, ThrottleReadBPS: 1 << 20,
			Waits: waits(0.03, 0.03, 0, 2e6)}, nil, false, CeilingNone},
		{"the cgroup's limit on the device", DeviceUse{Name: "vdb", TargetBytes: 1, Waits: waits(0.2, 0.2, 4.9e6, 0)},
			&IOLimit{Device: "vdb", ReadBPS: 5e6}, true, CeilingCgroup},
		{"another device's limit", DeviceUse{Name: "vdb", TargetBytes: 1, Waits: waits(0.2, 0.2, 4.9e6, 0)},
			&IOLimit{Device: "vdc", ReadBPS: 5e6}, false, CeilingNone},
		{"at the measured ceiling", DeviceUse{Name: "vda", TargetBytes: 1, Baseline: &Baseline{ReadBPS: 100e6},
			Waits: waits(0.8, 1.2, 95e6, 0)}, nil, true, CeilingBaseline},
		{"below the measured ceiling", DeviceUse{Name: "vda", TargetBytes: 1, Baseline: &Baseline{ReadBPS: 100e6},
			Waits: waits(0.5, 0.5, 20e6, 0)}, nil, false, CeilingBaseline},
	} {
		v := deviceVerdict([]DeviceUse{c.dev}, c.io)
		if v == nil || v.Saturated != c.saturated || v.Ceiling != c.ceiling || v.Name != c.dev.Name {
			t.Errorf("%s: %+v, want saturated %v, ceiling %q", c.name, v, c.saturated, c.ceiling)
		}
	}
	// The device most of the target's data went to; none without waits.
	devs := []DeviceUse{{Name: "vda", TargetBytes: 10, Waits: waits(0.1, 0.1, 1, 0)}, {Name: "loop0", TargetBytes: 100, Waits: waits(0.1, 0.1, 1, 0)},
		{Name: "sdb", TargetBytes: 1000}}
	if v := deviceVerdict(devs, nil); v == nil || v.Name != "loop0" {
		t.Errorf("chose %+v, want loop0", v)
	}
	if v := deviceVerdict(devs[2:], nil); v != nil {
		t.Errorf("a device with no waits judged: %+v", v)
	}
}
