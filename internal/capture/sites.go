package capture

import "github.com/whyslow/whyslow/internal/sysinfo"

// genericWaiters are kernel functions that wait for many kinds of things,
// each by calling schedule(): a wait whose site is one of them reuses no
// other wait's stack (wait_site, bpf/sched.bpf.h). io_schedule is where a
// page's writeback, a buffer's lock and a block bitmap's read all wait.
var genericWaiters = []string{"io_schedule", "io_schedule_timeout", "schedule_timeout", "schedule_hrtimeout_range_clock"}

// markGenericSites tells the kernel side where genericWaiters lie and where
// schedule() is (which frame unwound is the return into it: learn_site),
// then that it was told (sites_told): until then it reuses no stack and
// learns no site. Without kallsyms (no CAP_SYSLOG) neither is told, and
// stacks are reused by site as before.
func (e *Engine) markGenericSites(load func() *sysinfo.Kallsyms) {
	syms := load()
	e.sites.Lock()
	defer e.sites.Unlock()
	if e.sites.closed {
		return
	}
	if told := e.coll.Variables["sites_told"]; told != nil {
		defer told.Set(uint32(1)) // last: what it says is in place
	}
	v := e.coll.Variables["generic_sites"]
	if v == nil || syms == nil {
		return
	}
	var sites [8]uint64
	n := 0
	for _, name := range genericWaiters {
		if lo, hi, ok := syms.Range(name); ok && n < len(sites)/2 {
			sites[2*n], sites[2*n+1] = lo, hi
			n++
		}
	}
	v.Set(sites) // not set: stacks reused there, as before
	if lo, hi, ok := syms.Range("schedule"); ok {
		if r := e.coll.Variables["schedule_range"]; r != nil {
			r.Set([2]uint64{lo, hi}) // not set: the second frame unwound taken for it
		}
	}
}
