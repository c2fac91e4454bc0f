package source

import "time"

// Filter selects what an analysis looks at. Times are CLOCK_MONOTONIC ns, as
// stored; zero means open.
type Filter struct {
	Begin, End uint64
	PIDs       []uint32
	TIDs       []uint32
	Comms      []string
	FileGlob   string
	MinSize    int64 // bytes; -1 none
	MaxSize    int64
	Min, Max   time.Duration // latency; 0 none
	Limit      int
}

// NoFilter selects everything.
func NoFilter() Filter { return Filter{MinSize: -1, MaxSize: -1, Limit: 10} }
