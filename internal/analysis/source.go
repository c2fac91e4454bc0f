// Package analysis explains a recording: why a target was slow (Explain),
// along its critical path, and request by request (FindRequests). Every
// analysis is a function of the recording and its options; output renders
// its result. The rooms below it: source (the recording as analyses read
// it), critpath (the critical path's walker and its policy), protocol (the
// requests' wire formats), reports (usage, stats, log, stacks, series).
package analysis

import (
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/store"
)

// Source is a recording as the explanations read it: a source.Source, with
// the target's processes an analysis run chose (useTargets).
type Source struct {
	*source.Source
	// targets is the pid set target_pids holds, if any (useTargets).
	targets []uint32
}

// NewSource wraps an open recording.
func NewSource(r *store.Recording) *Source { return &Source{Source: source.New(r)} }

// hold gives an analysis run a connection of its own
// (source.Source.Hold). A Source already held is returned as it is.
func (s *Source) hold() (held *Source, done func(), err error) {
	if s.Held() {
		return s, func() {}, nil
	}
	h, done, err := s.Source.Hold()
	if err != nil {
		return nil, nil, err
	}
	return &Source{Source: h}, done, nil
}
