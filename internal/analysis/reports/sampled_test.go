package reports

import (
	"slices"
	"testing"
)

// A wait with a timeout timed out when it was seen to end no earlier than
// its timeout could end it; one ended sooner waited on what ended it. The
// looks of one wait are a thread's run that found it had not run since.
func TestTimedOutLooks(t *testing.T) {
	const ms = uint64(1e6)
	look := func(tid uint32, ts, ran, timeoutAt uint64) sampledLook {
		return sampledLook{tid: tid, state: 'S', nr: 7, ts: ts * ms, ran: ran, timeoutAt: timeoutAt * ms}
	}
	looks := []sampledLook{
		// thread 1: a poll of 1 s from ~0 ms, seen over until 1050: timed out.
		look(1, 50, 1, 1000), look(1, 100, 0, 1000), look(1, 1000, 0, 1000), look(1, 1050, 3, 0),
		// thread 2: a poll of 5 s ended at ~500 ms: not.
		look(2, 50, 1, 5050), look(2, 100, 0, 5050), look(2, 500, 0, 5050), look(2, 550, 2, 0),
		// thread 3: the same timeout again right after (a loop of polls):
		// each wait on its own; the second still going when the target
		// ended at 1200, before its timeout.
		look(3, 50, 1, 500), look(3, 500, 0, 500), look(3, 550, 1, 1550), look(3, 600, 0, 1550),
		// thread 4: the target ended after its timeout: timed out.
		look(4, 50, 1, 1100), look(4, 100, 0, 1100),
	}
	got := timedOutLooks(looks, 1200*ms)
	want := []bool{
		true, true, true, false,
		false, false, false, false,
		true, true, false, false,
		true, true,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
	// The target's end unknown: a wait is over at its thread's last look.
	if got := timedOutLooks(looks[12:], 0); slices.Contains(got, true) {
		t.Errorf("no end: %v", got)
	}
}
