package live

import (
	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// systemReader reads the machine-wide numbers no event carries: dirty and
// writeback pages, pressure stall information, and how long each device was
// busy (iostat's %util) from /proc/diskstats.
type systemReader struct {
	proc procfs.FS
	disk blockdevice.FS
	ok   bool
	// busy is each device's io_ticks (ms) at the last read.
	busy map[uint32]uint64
}

func newSystemReader(procRoot, sysRoot string) *systemReader {
	r := &systemReader{busy: map[uint32]uint64{}}
	var err1, err2 error
	r.proc, err1 = procfs.NewFS(procRoot)
	r.disk, err2 = blockdevice.NewFS(procRoot, sysRoot)
	r.ok = err1 == nil && err2 == nil
	return r
}

// read fills f.System and each device's busy time since the last read.
func (r *systemReader) read(f *Frame) {
	if !r.ok {
		return
	}
	if mi, err := r.proc.Meminfo(); err == nil {
		if mi.DirtyBytes != nil {
			f.System.DirtyBytes = *mi.DirtyBytes
		}
		if mi.WritebackBytes != nil {
			f.System.WritebackBytes = *mi.WritebackBytes
		}
	}
	for _, res := range []string{"cpu", "io", "memory"} {
		st, err := r.proc.PSIStatsForResource(res)
		if err != nil {
			continue
		}
		if f.System.PSI == nil {
			f.System.PSI = map[string]PSI{}
		}
		var p PSI
		if st.Some != nil {
			p.Some10 = st.Some.Avg10
		}
		if st.Full != nil {
			p.Full10 = st.Full.Avg10
		}
		f.System.PSI[res] = p
	}
	stats, err := r.disk.ProcDiskstats()
	if err != nil {
		return
	}
	for _, s := range stats {
		dev := s.MajorNumber<<20 | s.MinorNumber
		before, seen := r.busy[dev]
		r.busy[dev] = s.IOsTotalTicks
		if d := f.Devices[dev]; d != nil && seen && s.IOsTotalTicks >= before {
			d.BusyNS = (s.IOsTotalTicks - before) * 1e6
		}
	}
}
