package capture

import "fmt"

// LostSources names the per-CPU lost counters, in the order of enum lost_source.
var LostSources = []string{"syscall", "file", "offcpu", "block", "meta", "uring", "aggregate", "stack", "payload", "sample"}

// Lost sums the per-CPU lost-event counters by source.
func (e *Engine) Lost() (map[string]uint64, error) {
	out := make(map[string]uint64, len(LostSources))
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
	return out, nil
}
