package capture

import (
	"time"

	"github.com/whyslow/whyslow/internal/sysinfo"
)

// The spool's loader paces itself by the CPUs the traced work leaves it.
// Storing a --full capture's row costs several times what taking it from
// the ring costs (BENCHMARKS.md, section 2b): on a machine whose every CPU
// the traced work keeps busy, a loader running beside it took its time from
// the target (two fio jobs on two CPUs lost half their throughput to it).
// So while tasks wait for a CPU the loader waits instead, the backlog
// staying in the spool, and it loads again once the CPUs have time to
// spare, or when the capture ends, as perf record leaves its decoding to
// perf report. On a machine with CPUs to spare it never waits.
//
// Contention is read from the kernel's pressure stall information (how
// long some runnable task waited for a CPU), spare time from /proc/stat's
// idle time: while the loader runs, idle time does not show what it takes
// from others, and while it waits, pressure does not show what it would.
type pacer struct {
	idle, waited func() (time.Duration, error)
	at           time.Time
	idle0        time.Duration
	waited0      time.Duration
	paused       bool
}

const (
	// paceEvery is how often the pacer looks.
	paceEvery = 100 * time.Millisecond
	// paceBusy: a runnable task waited for a CPU this share of the time.
	paceBusy = 0.10
	// paceFree: CPUs left idle, together, for a waiting loader to load.
	paceFree = 0.5
)

// newPacer reads the live system; nil, a loader that never waits, where
// the kernel has no pressure stall information.
func newPacer() *pacer {
	if _, err := sysinfo.Host.CPUWaited(); err != nil {
		return nil
	}
	return &pacer{idle: sysinfo.Host.CPUIdle, waited: sysinfo.Host.CPUWaited}
}

// hold says whether the loader should wait rather than load, as of now.
func (p *pacer) hold(now time.Time) bool {
	if p == nil {
		return false
	}
	if now.Sub(p.at) < paceEvery {
		return p.paused
	}
	idle, err := p.idle()
	waited, err2 := p.waited()
	if err != nil || err2 != nil {
		p.paused = false
		return false
	}
	if !p.at.IsZero() {
		wall := now.Sub(p.at).Seconds()
		p.paused = pause(p.paused, (idle-p.idle0).Seconds()/wall, (waited-p.waited0).Seconds()/wall)
	}
	p.at, p.idle0, p.waited0 = now, idle, waited
	return p.paused
}

// pause is the pacer's rule. A loading loader pauses when tasks waited for
// a CPU paceBusy of the time; a paused one loads again when the CPUs were
// idle paceFree CPUs' worth. Both in CPU seconds a second of the period.
func pause(paused bool, idle, waited float64) bool {
	if paused {
		return idle < paceFree
	}
	return waited >= paceBusy
}
