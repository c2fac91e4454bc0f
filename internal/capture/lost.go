package capture

import "fmt"

// LostSources names the per-CPU lost counters, in the order of enum lost_source.
var LostSources = []string{"syscall", "file", "offcpu", "block", "meta", "uring", "aggregate", "stack", "payload", "sample"}

// LostDecode is the lost source of ring records that reached user space but
// did not decode (a damaged or unknown record): counted here, not in the
// kernel, and shown wherever the kernel's lost counts are.
const LostDecode = "decode"

// Lost sums the per-CPU lost-event counters by source, with the records
// user space could not decode under LostDecode.
func (e *Engine) Lost() (map[string]uint64, error) {
	out := make(map[string]uint64, len(LostSources)+1)
	m := e.maps.Lost
	for i, name := range LostSources {
		var perCPU []uint64
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("reading lost counter %s: %w", name, err)
		}
		var sum uint64
		for _, v := range perCPU {
			sum += v
		}
		out[name] = sum
	}
	out[LostDecode] = e.undecodable.Load()
	return out, nil
}
