package procsample

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"
)

// taskStat is what a tick needs of /proc/PID/task/TID/stat.
type taskStat struct {
	Comm  string
	State byte
	PPID  int
}

// parseStat reads a stat line: "PID (COMM) S PPID ...". The name may hold
// spaces and parentheses: it ends at the last ')'. prev is the name the
// last reading found: kept, not allocated again, when it has not changed.
func parseStat(b []byte, prev string) (taskStat, bool) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+4 > len(b) {
		return taskStat{}, false
	}
	st := taskStat{Comm: prev, State: b[end+2]}
	if string(b[open+1:end]) != prev {
		st.Comm = string(b[open+1 : end])
	}
	rest := b[end+4:]
	if sp := bytes.IndexByte(rest, ' '); sp > 0 {
		rest = rest[:sp]
	}
	st.PPID, _ = strconv.Atoi(string(rest))
	return st, true
}

// startedAt is when the thread of a stat line started (its field 22,
// starttime: clock ticks since boot), as CLOCK_MONOTONIC ns; 0 unknown.
func startedAt(b []byte) uint64 {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 20 {
		return 0
	}
	ticks, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0
	}
	var boot, mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot)
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	at := ticks * (1e9 / clockTicks)
	if off := uint64(boot.Nano() - mono.Nano()); at > off {
		return at - off
	}
	return 0
}

// clockTicks is USER_HZ, the unit of /proc's clock ticks: 100 on every
// architecture Linux has.
const clockTicks = 100

// schedstat is /proc/PID/task/TID/schedstat: time on a CPU, time runnable
// waiting for one (run delay), both ns, and how many times it got one.
type schedstat struct{ Ran, Delay, Runs uint64 }

func parseSchedstat(b []byte) (schedstat, bool) {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return schedstat{}, false
	}
	var s schedstat
	var err error
	for i, p := range []*uint64{&s.Ran, &s.Delay, &s.Runs} {
		if *p, err = strconv.ParseUint(string(f[i]), 10, 64); err != nil {
			return schedstat{}, false
		}
	}
	return s, true
}

// parseWchan: the function a blocked task waits in; "0" is none (running,
// or hidden from this reader).
func parseWchan(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if s == "0" {
		return ""
	}
	return s
}
