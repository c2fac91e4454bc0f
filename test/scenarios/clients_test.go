package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// What the clients of a test sent, as they measured it, and the invariant
// every request test holds report requests to (issue 42): each request the
// server counted is one a client sent, from the client's address, inside the
// client's own time; server-side, never longer than the client waited.

// sentRequest is one request as its client saw it.
type sentRequest struct {
	from       string        // the client's address: the server's peer
	start, end time.Time     // around the client's call (curl: around its process)
	took       time.Duration // the client's own measurement
}

type sentLog struct {
	mu   sync.Mutex
	reqs []sentRequest
}

// sentLogs holds each test's log (by its *testing.T): curlTimed and the Go
// clients note every request they send.
var sentLogs sync.Map

func sent(t *testing.T) *sentLog {
	l, _ := sentLogs.LoadOrStore(t, &sentLog{})
	return l.(*sentLog)
}

func (l *sentLog) note(r sentRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}

// traced makes req note, in local, the address its connection sends from.
func traced(req *http.Request, local *string) *http.Request {
	return req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(c httptrace.GotConnInfo) { *local = c.Conn.LocalAddr().String() },
	}))
}

// doTimed sends req with c and notes it in t's log; it returns the response
// and the client's latency once the body is read by the caller (done).
func doTimed(t *testing.T, c *http.Client, req *http.Request) (resp *http.Response, done func() time.Duration, err error) {
	var from string
	start := time.Now()
	resp, err = c.Do(traced(req, &from))
	return resp, func() time.Duration {
		end := time.Now()
		sent(t).note(sentRequest{from: from, start: start, end: end, took: end.Sub(start)})
		return end.Sub(start)
	}, err
}

// seenRequest is one request report requests counted.
type seenRequest struct {
	PID       uint32  `json:"pid"`
	Comm      string  `json:"comm"`
	Peer      string  `json:"peer"`
	Label     string  `json:"label"`
	Begin     string  `json:"begin"`
	DurationS float64 `json:"duration_s"`
	QueuedS   float64 `json:"queued_s"`
	Verdict   struct {
		Reason  string `json:"reason"`
		Summary string `json:"summary"`
	} `json:"verdict"`
	Blame []struct {
		Comm     string `json:"comm"`
		Activity string `json:"activity"`
	} `json:"blame"`
}

// allRequests is every request report requests counts in rec.
func allRequests(t *testing.T, rec string) []seenRequest {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), filepath.Join(bin, "whyslow"), "report", "requests", rec, "--json", "--limit", "1000").Output()
	if err != nil {
		t.Fatalf("report requests: %v", err)
	}
	var r struct {
		Count    int           `json:"count"`
		Requests []seenRequest `json:"requests"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("requests JSON: %v", err)
	}
	if len(r.Requests) != r.Count {
		t.Fatalf("%d requests listed of %d", len(r.Requests), r.Count)
	}
	return r.Requests
}

// slack is how far a server-side request may reach past its client's own
// time: the two clocks' readings, a millisecond.
const slack = time.Millisecond

// matchClients checks the invariant on rec: every request counted matches a
// distinct request a client of t sent, from its address, and lies inside the
// client's time (server-side duration <= the client's + 1 ms). It returns,
// every request counted, and the client's of each (by index).
func matchClients(t *testing.T, rec string) ([]seenRequest, map[int]sentRequest) {
	t.Helper()
	seen := allRequests(t, rec)
	l := sent(t)
	l.mu.Lock()
	byFrom := map[string][]sentRequest{}
	for _, s := range l.reqs {
		byFrom[s.from] = append(byFrom[s.from], s)
	}
	l.mu.Unlock()
	order := make([]int, len(seen))
	for i := range order {
		order[i] = i
	}
	begins := make([]time.Time, len(seen))
	for i, q := range seen {
		b, err := time.Parse(time.RFC3339Nano, q.Begin)
		if err != nil {
			t.Fatalf("request %d begins %q: %v", i, q.Begin, err)
		}
		begins[i] = b
	}
	sort.Slice(order, func(a, b int) bool { return begins[order[a]].Before(begins[order[b]]) })
	used := map[*sentRequest]bool{}
	out := map[int]sentRequest{}
	for _, i := range order {
		q := seen[i]
		d := time.Duration(q.DurationS * 1e9)
		var match *sentRequest
		cands := byFrom[q.Peer]
		for j := range cands {
			c := &cands[j]
			if !used[c] && !begins[i].Before(c.start.Add(-slack)) && !begins[i].Add(d).After(c.end.Add(slack)) {
				match = c
				break
			}
		}
		if match == nil {
			var theirs []string
			for _, c := range cands {
				theirs = append(theirs, fmt.Sprintf("%s for %v", c.start.UTC().Format("15:04:05.000000"), c.took))
			}
			t.Errorf("%s %s from %s at %s, %v server-side (queued %.3fs): no client sent it in that time (the client's from there: %v)",
				q.Comm, q.Label, q.Peer, q.Begin, d, q.QueuedS, theirs)
			continue
		}
		used[match] = true
		out[i] = *match
		if d > match.took+slack {
			t.Errorf("%s %s from %s: %v server-side, %v at the client", q.Comm, q.Label, q.Peer, d, match.took)
		}
	}
	return seen, out
}
