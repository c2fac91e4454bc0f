package requests

import (
	"slices"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/protocol/protocoltest"
)

// TestCutRequests: a keep-alive connection with two requests (one whose body
// comes late), a client connection of the server's own (to a backend) that
// cuts nothing, and a connection accepted before the recording.
func TestCutRequests(t *testing.T) {
	srv := connKey{pid: 1, ino: 10}
	backend := connKey{pid: 1, ino: 11}
	old := connKey{pid: 1, ino: 12}
	ms := uint64(1e6)
	calls := []socketCall{
		{conn: srv, tid: 1, ts: 0, dur: ms, name: "accept4", class: "net", ret: 5},
		{conn: srv, tid: 2, ts: 1 * ms, dur: 2 * ms, name: "recvfrom", class: "net", ret: 100, blocked: true},
		{conn: srv, tid: 2, ts: 10 * ms, dur: ms, name: "sendto", class: "net", ret: 500},
		{conn: srv, tid: 2, ts: 12 * ms, dur: ms, name: "sendto", class: "net", ret: 500},
		{conn: srv, tid: 2, ts: 20 * ms, dur: 5 * ms, name: "recvfrom", class: "net", ret: 50, blocked: true},
		{conn: srv, tid: 2, ts: 25 * ms, dur: 40 * ms, name: "recvfrom", class: "net", ret: 50, blocked: true}, // the body, late
		{conn: srv, tid: 2, ts: 70 * ms, dur: ms, name: "write", class: "write", ret: 10},
		{conn: srv, tid: 2, ts: 80 * ms, dur: ms, name: "recvfrom", class: "net", ret: 0},
		{conn: backend, tid: 2, ts: 3 * ms, dur: ms, name: "connect", class: "net", ret: 0},
		{conn: backend, tid: 2, ts: 4 * ms, dur: ms, name: "sendto", class: "net", ret: 20},
		{conn: backend, tid: 2, ts: 5 * ms, dur: 3 * ms, name: "recvfrom", class: "net", ret: 200},
		{conn: old, tid: 3, ts: 30 * ms, dur: ms, name: "read", class: "read", ret: 80},
		{conn: old, tid: 3, ts: 33 * ms, dur: ms, name: "write", class: "write", ret: 80},
		{conn: old, tid: 3, ts: 40 * ms, dur: ms, name: "close", class: "close", ret: 0},
	}
	got, clients := cutRequests(calls)
	if !clients[backend] || clients[srv] || clients[old] {
		t.Errorf("client connections %v, want the backend's alone", clients)
	}
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3: %+v", len(got), got)
	}
	first, second, oldReq := got[0], got[1], got[2]
	if first.conn != srv || first.begin != 3*ms || first.end != 13*ms || first.BytesIn != 100 || first.BytesOut != 1000 || first.TID != 2 {
		t.Errorf("first request: %+v", first.Entry)
	}
	if second.begin != 25*ms || second.end != 71*ms || second.ClientWaitS != 0.04 || second.BytesIn != 100 {
		t.Errorf("second request: begin %d end %d client wait %v in %d", second.begin, second.end, second.ClientWaitS, second.BytesIn)
	}
	if oldReq.conn != old || oldReq.begin != 31*ms || oldReq.end != 34*ms {
		t.Errorf("request on a connection older than the recording: %+v", oldReq.Entry)
	}
	if q := quantiles([]float64{5, 1, 3, 2, 4}); q.P50 != 3 || q.Max != 5 || q.P90 != 5 {
		t.Errorf("quantiles %+v", q)
	}
}

// TestCutMessages: requests end with the write that answers them: the
// oldest waiting (PostgreSQL), or every one read before it (Redis); a
// long answer's later writes extend it; one never answered is none.
func TestCutMessages(t *testing.T) {
	k := connKey{pid: 1, ino: 7}
	rd := func(ts uint64, data string) socketCall {
		return socketCall{conn: k, tid: 1, ts: ts, dur: 1, name: "read", class: "read", ret: int64(len(data))}
	}
	wr := func(ts uint64) socketCall {
		return socketCall{conn: k, tid: 2, ts: ts, dur: 1, name: "write", class: "write", ret: 10}
	}
	sync := protocoltest.Postgres('S', "")
	pg := []string{
		protocoltest.PostgresStartup(),
		protocoltest.PostgresExtended("", "SELECT 1") + sync + protocoltest.PostgresExtended("", "SELECT 2") + sync,
		protocoltest.Postgres('Q', "SELECT 3\x00"),
		protocoltest.Postgres('Q', "SELECT 4\x00"),
	}
	calls := []socketCall{{conn: k, ts: 1, name: "accept4"}, rd(10, pg[0]), wr(12), rd(20, pg[1]), wr(30), wr(40), rd(50, pg[2]), wr(60), wr(70), rd(80, pg[3])}
	bytesOf := map[labelKey]firstBytes{}
	for i, c := range []int{1, 3, 6, 9} {
		bytesOf[labelKey{k, calls[c].ts}] = firstBytes{data: []byte(pg[i])}
	}
	reqs, clients := frameRequests(calls, bytesOf, true)
	var got []string
	for _, r := range reqs {
		got = append(got, r.Label)
		if r.begin == 0 || r.end <= r.begin {
			t.Errorf("%s: [%d, %d]", r.Label, r.begin, r.end)
		}
	}
	if want := []string{"postgres SELECT", "postgres SELECT", "postgres SELECT"}; !slices.Equal(got, want) || len(clients) != 0 {
		t.Fatalf("requests %q (clients %v), want %q", got, clients, want)
	}
	if ends := []uint64{reqs[0].end, reqs[1].end, reqs[2].end}; !slices.Equal(ends, []uint64{31, 41, 71}) {
		t.Errorf("ends %v, want 31 41 71 (the third's answer is two writes)", ends)
	}
	// Redis: one write answers the pipeline.
	rs := "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n"
	calls = []socketCall{rd(10, rs), wr(20)}
	reqs, _ = frameRequests(calls, map[labelKey]firstBytes{{k, 10}: {data: []byte(rs)}}, true)
	if len(reqs) != 2 || reqs[0].end != 21 || reqs[1].end != 21 || reqs[0].begin != 11 {
		t.Errorf("redis pipeline: %d requests, want 2 in [11, 21]", len(reqs))
	}
	// Without every read's bytes (an older recording), read-then-write.
	reqs, _ = frameRequests(calls, map[labelKey]firstBytes{{k, 10}: {data: []byte(rs)}}, false)
	if len(reqs) != 1 {
		t.Errorf("an older recording's pipeline: %d requests, want 1 (read-then-write)", len(reqs))
	}
}
