package capture

import "testing"

func TestSizeMaps(t *testing.T) {
	specs := func() *whyslowMapSpecs {
		spec, err := loadWhyslow()
		if err != nil {
			t.Fatal(err)
		}
		var m whyslowMapSpecs
		if err := spec.Assign(&m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	object := specs()
	const small = targetedStackBuckets
	for _, c := range []struct {
		name                                  string
		opts                                  Options
		pidMax                                uint32
		targets, offcpu, waiting, stacks, agg uint32
	}{
		{"run, pid_max 32768", Options{}, 32768, 32768, 32768, 32768, small, 1},
		{"run, pid_max 4M", Options{}, 1 << 22, object.Targets.MaxEntries, object.OffcpuStart.MaxEntries, object.WaitingAtStart.MaxEntries, small, 1},
		{"run, pid_max unknown", Options{}, 0, object.Targets.MaxEntries, object.OffcpuStart.MaxEntries, object.WaitingAtStart.MaxEntries, small, 1},
		{"run, pid_max 1000", Options{}, 1000, 1000, 1000, 1000, small, 1},
		{"system-wide", Options{SystemWide: true}, 32768, 1, 32768, 32768, object.Stacks.MaxEntries, 1},
		{"--syscalls", Options{Level: Syscalls}, 32768, 32768, 32768, 32768, small, object.Agg.MaxEntries},
		{"stacks asked by a test", Options{stackBuckets: 1}, 32768, 32768, 32768, 32768, 1, 1},
	} {
		m := specs()
		sizeMaps(m, c.opts, c.pidMax)
		for _, g := range []struct {
			what      string
			got, want uint32
		}{
			{"targets", m.Targets.MaxEntries, c.targets},
			{"offcpu_start", m.OffcpuStart.MaxEntries, c.offcpu},
			{"waiting_at_start", m.WaitingAtStart.MaxEntries, c.waiting},
			{"stacks", m.Stacks.MaxEntries, c.stacks},
			{"agg", m.Agg.MaxEntries, c.agg},
		} {
			if g.got != g.want {
				t.Errorf("%s: %s has %d entries, want %d", c.name, g.what, g.got, g.want)
			}
		}
	}
}
