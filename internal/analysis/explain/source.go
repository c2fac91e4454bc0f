// Package explain says why a target was slow (Explain): where its threads'
// time went, along its critical path (internal/analysis/critpath), the
// evidence (files, devices, network), blame and the verdict, and the
// timeline of its threads. It returns facts; output words them. It reads
// the recording through internal/analysis/source; the requests
// (internal/analysis/requests) build on it; it does not import them.
package explain

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

// Hold gives an analysis run a connection of its own
// (source.Source.Hold). A Source already held is returned as it is.
func (s *Source) Hold() (held *Source, done func(), err error) {
	if s.Held() {
		return s, func() {}, nil
	}
	h, done, err := s.Source.Hold()
	if err != nil {
		return nil, nil, err
	}
	return &Source{Source: h}, done, nil
}
