package explain

import "github.com/whyslow/whyslow/internal/analysis/critpath"

// The critical path is its own room (internal/analysis/critpath); its
// result keeps these names in the explanation and the requests.
type (
	CriticalPath = critpath.Path
	PathSegment  = critpath.Segment
	PathLink     = critpath.Link
)
