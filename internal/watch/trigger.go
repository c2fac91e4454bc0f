package watch

import (
	"fmt"
	"strings"
	"time"
)

// Trigger is why an incident is written: what fired, when, and the thread or
// request it names (none for PSI and snapshots).
type Trigger struct {
	Kind   string // slow-request, stall, psi-io, psi-cpu, psi-memory, snapshot
	At     uint64 // CLOCK_MONOTONIC ns: when the slow thing began
	PID    uint32
	TID    uint32
	Comm   string
	Detail string // one line: "GET /session.php, 1.3 s so far", "D-state 2.1 s (disk-write)"
	// Cgroup is PID's cgroup path, read when the trigger fired (a
	// container, a unit: where a limit could come from); empty: not known.
	Cgroup string
}

// Kinds of trigger, as incident files and metrics name them.
const (
	KindSlowRequest = "slow-request"
	KindStall       = "stall"
	KindSnapshot    = "snapshot"
)

// PSIRule is a pressure trigger: --psi RESOURCE:some|full>SHARE%/DURATION,
// the share of DURATION in which some (or all) non-idle tasks stalled on the
// resource, as /proc/pressure/RESOURCE counts it.
type PSIRule struct {
	Resource string // io, cpu, memory
	Full     bool
	Share    float64 // 0..1
	Over     time.Duration
}

func (r PSIRule) String() string {
	kind := "some"
	if r.Full {
		kind = "full"
	}
	return fmt.Sprintf("%s:%s>%g%%/%s", r.Resource, kind, r.Share*100, r.Over)
}

// ParsePSIRule parses "io:full>20%/5s".
func ParsePSIRule(s string) (PSIRule, error) {
	var r PSIRule
	bad := func(why string) (PSIRule, error) {
		return r, fmt.Errorf("--psi %q: %s (want RESOURCE:some|full>SHARE%%/DURATION, e.g. io:full>20%%/5s)", s, why)
	}
	res, rest, ok := strings.Cut(s, ":")
	if !ok {
		return bad("no resource")
	}
	switch res {
	case "io", "cpu", "memory":
	default:
		return bad("the resource is io, cpu or memory")
	}
	kind, rest, ok := strings.Cut(rest, ">")
	if !ok || (kind != "some" && kind != "full") {
		return bad("some or full, then >")
	}
	share, over, ok := strings.Cut(rest, "/")
	if !ok || !strings.HasSuffix(share, "%") {
		return bad("a share in %, then /DURATION")
	}
	var pct float64
	if _, err := fmt.Sscanf(strings.TrimSuffix(share, "%"), "%g", &pct); err != nil || pct <= 0 || pct > 100 {
		return bad("the share is a percentage above 0 and at most 100")
	}
	d, err := time.ParseDuration(over)
	if err != nil || d < time.Second || d > time.Hour {
		return bad("the duration is from 1s to 1h")
	}
	if res == "cpu" && kind == "full" {
		return bad("cpu has no full pressure at the system level")
	}
	return PSIRule{Resource: res, Full: kind == "full", Share: pct / 100, Over: d}, nil
}

// Kind is the trigger kind a rule fires: psi-io, psi-cpu, psi-memory.
func (r PSIRule) Kind() string { return "psi-" + r.Resource }
