package source

import (
	"fmt"
	"strings"
	"time"
)

// Clock maps recording timestamps to wall time and back.
type Clock struct {
	OffsetNS  int64  // wall = mono + offset
	StartMono uint64 // recording start
	EndMono   uint64
}

func (c Clock) Wall(mono uint64) time.Time { return time.Unix(0, int64(mono)+c.OffsetNS) }

func (c Clock) Mono(t time.Time) uint64 { return uint64(t.UnixNano() - c.OffsetNS) }

// ParseTime reads a --begin/--end value: an offset from the recording start
// (+2.5s), a clock time (hh:mm:ss[.frac]) on the recording's first day, or a
// full date and time (2006-01-02 15:04:05[.frac]).
func (c Clock) ParseTime(s string, utc bool) (uint64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "+") {
		d, err := time.ParseDuration(s[1:])
		if err != nil {
			return 0, fmt.Errorf("bad offset %q: want e.g. +2.5s or +150ms", s)
		}
		return c.StartMono + uint64(d), nil
	}
	loc := time.Local
	if utc {
		loc = time.UTC
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return c.Mono(t), nil
		}
	}
	t, err := time.ParseInLocation("15:04:05.999999999", s, loc)
	if err != nil {
		return 0, fmt.Errorf("bad time %q: want hh:mm:ss[.ns], a date and time, or +offset", s)
	}
	day := c.Wall(c.StartMono).In(loc)
	t = time.Date(day.Year(), day.Month(), day.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc)
	return c.Mono(t), nil
}

// ParseRange reads --timerange [BEGIN,END].
func (c Clock) ParseRange(s string, utc bool) (uint64, uint64, error) {
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(s), "["), "]")
	b, e, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, fmt.Errorf("bad time range %q: want [BEGIN,END]", s)
	}
	begin, err := c.ParseTime(b, utc)
	if err != nil {
		return 0, 0, err
	}
	end, err := c.ParseTime(e, utc)
	if err != nil {
		return 0, 0, err
	}
	if end < begin {
		return 0, 0, fmt.Errorf("time range ends before it begins")
	}
	return begin, end, nil
}

// Window is a span of the recording's clock (CLOCK_MONOTONIC ns): a
// target's life, a request's time.
type Window struct{ Begin, End uint64 }
