package requests

import (
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestRequestsSplitReadsFromWritesAsSQL: requests tell a call that brings a
// request's bytes in from one that sends the answer out exactly as the
// is_read and is_write macros do for usage and explain, for every syscall
// whyslow names.
func TestRequestsSplitReadsFromWritesAsSQL(t *testing.T) {
	rec, err := store.Open(storetest.Stories[0].Record(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	src := storetest.Held(t, explain.NewSource(rec).Hold) // made with the is_read and is_write macros
	conn := connKey{pid: 1, ino: 10}
	for _, nc := range event.SyscallNames() {
		name, class := nc[0], nc[1]
		var sqlRead, sqlWrite bool
		if err := src.QueryRow("SELECT is_read(?::VARCHAR, ?::VARCHAR), is_write(?::VARCHAR, ?::VARCHAR)",
			class, name, class, name).Scan(&sqlRead, &sqlWrite); err != nil {
			t.Fatal(err)
		}
		// A read: the call alone on a connection, then an answer, cuts a
		// request whose bytes in are the call's.
		got, _ := cutRequests([]socketCall{
			{conn: conn, ts: 1, dur: 1, name: name, class: class, ret: 100},
			{conn: conn, ts: 5, dur: 1, name: "write", class: "write", ret: 1},
		})
		read := len(got) == 1 && got[0].BytesIn == 100
		// A write: after a request came in, the call answers it.
		got, _ = cutRequests([]socketCall{
			{conn: conn, ts: 1, dur: 1, name: "read", class: "read", ret: 1},
			{conn: conn, ts: 5, dur: 1, name: name, class: class, ret: 50},
		})
		write := len(got) == 1 && got[0].BytesOut == 50
		if read != sqlRead || write != sqlWrite {
			t.Errorf("%s (%s): requests read %v write %v, SQL read %v write %v", name, class, read, write, sqlRead, sqlWrite)
		}
		// A read of 0 bytes is the end of the connection: the request
		// still unanswered is not one (nor after a close, or a connect that
		// makes the connection a client's).
		got, _ = cutRequests([]socketCall{
			{conn: conn, ts: 1, dur: 1, name: "read", class: "read", ret: 1},
			{conn: conn, ts: 3, dur: 1, name: name, class: class, ret: 0},
			{conn: conn, ts: 5, dur: 1, name: "write", class: "write", ret: 1},
		})
		if eof := len(got) == 0; eof != (sqlRead || name == "close" || name == "connect") {
			t.Errorf("%s (%s) returning 0: requests see the end %v, SQL read %v", name, class, eof, sqlRead)
		}
	}
}

// The kernel's request trigger (note_request in bpf/syscall.bpf.h, which
// keeps the first bytes of a server's reads) keeps the conversation's rule
// as serverSide and the framers read it: it asks bpf/conversation.h,
// generated from internal/event/conversation.go (gensyscalls' tests hold
// the header to it), and writes no call or class of it again.
func TestTriggerAsksTheConversationRule(t *testing.T) {
	src, err := os.ReadFile("../../../bpf/syscall.bpf.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\bnote_request\(.*?\n}\n`).Find(src)
	if m == nil {
		t.Fatal("no note_request in bpf/syscall.bpf.h: has it moved?")
	}
	body := string(m)
	for _, call := range []string{"conn_opened_end(in->nr)", "reads_conn(in->nr, cls)", "writes_conn(in->nr, cls)", "payload_kept("} {
		if !strings.Contains(body, call) {
			t.Errorf("note_request does not ask %s", call)
		}
	}
	for _, w := range regexp.MustCompile(`\b(NR_\w+|CLS_READ|CLS_WRITE)\b`).FindAllString(body, -1) {
		t.Errorf("note_request names %s: the conversation's rule is bpf/conversation.h's", w)
	}
}

// serverSide tells a connection's end by the call that opened it, else by
// its first data (event.ConnOpeners, event.Reads and event.Writes): the
// rule the kernel's trigger keeps (conn_opened_end, reads_conn, writes_conn).
func TestServerSide(t *testing.T) {
	for _, tc := range []struct {
		name, class    string
		ret            int64
		server, decide bool
	}{
		{"accept", "net", 5, true, true},
		{"accept4", "net", 5, true, true},
		{"connect", "net", 0, false, true},
		{"connect", "net", -115, false, true}, // EINPROGRESS: still the client
		{"read", "read", 10, true, true},
		{"recvfrom", "net", 10, true, true},
		{"recvmsg", "net", 10, true, true},
		{"write", "write", 10, false, true},
		{"sendto", "net", 10, false, true},
		{"sendmsg", "net", 10, false, true},
		{"sendfile", "xfer", 10, false, false},
		{"read", "read", 0, false, false},
		{"close", "close", 0, false, false},
	} {
		server, decided := serverSide(socketCall{name: tc.name, class: tc.class, ret: tc.ret})
		if server != tc.server || decided != tc.decide {
			t.Errorf("%s returning %d: server %v decided %v, want %v %v", tc.name, tc.ret, server, decided, tc.server, tc.decide)
		}
	}
}

// TestUpstreamHopsAndEnds: a front request's calls on a connection it opened
// are its hop; the two ends of a unix connection pair by peer inode even when
// one end was described before the other had one, TCP ends by addresses.
func TestUpstreamHopsAndEnds(t *testing.T) {
	ms := uint64(1e6)
	front := connKey{pid: 1, ino: 10}
	up := connKey{pid: 1, dev: 8, ino: 11}
	fpm := connKey{pid: 2, dev: 8, ino: 12}
	calls := []socketCall{
		{conn: front, tid: 1, ts: 0, dur: ms, name: "recvfrom", class: "net", ret: 100},
		{conn: up, tid: 1, ts: 2 * ms, dur: 0, name: "connect", class: "net", ret: 0},
		{conn: up, tid: 1, ts: 3 * ms, dur: ms, name: "writev", class: "write", ret: 500},
		{conn: fpm, tid: 7, ts: 4 * ms, dur: ms, name: "read", class: "read", ret: 500},
		{conn: fpm, tid: 7, ts: 50 * ms, dur: ms, name: "write", class: "write", ret: 900},
		{conn: up, tid: 1, ts: 52 * ms, dur: ms, name: "recvfrom", class: "net", ret: 900},
		{conn: front, tid: 1, ts: 60 * ms, dur: ms, name: "writev", class: "write", ret: 900},
	}
	sort.Slice(calls, func(i, j int) bool {
		return calls[i].conn.ino < calls[j].conn.ino || calls[i].conn.ino == calls[j].conn.ino && calls[i].ts < calls[j].ts
	})
	reqs, clients := cutRequests(calls)
	if len(reqs) != 2 || !clients[up] {
		t.Fatalf("%d requests (want the front's and FPM's), clients %v", len(reqs), clients)
	}
	var r *request
	for _, q := range reqs {
		if q.conn == front {
			r = q
		}
	}
	hops := hopsOf(calls, clients, reqs)[r]
	if len(hops) != 1 || hops[0].conn != up || hops[0].first != 3*ms || hops[0].last != 53*ms {
		t.Fatalf("hops %+v, want one on the upstream connection from 3 to 53 ms", hops)
	}
	// nginx's end was described before FPM accepted: no peer inode there.
	pairs := otherEnds(map[connKey]connEnds{up: {peer: "/run/fpm.sock"}, fpm: {local: "/run/fpm.sock", peerIno: up.ino}})
	if !slices.Equal(pairs[up], []connKey{fpm}) || !slices.Equal(pairs[fpm], []connKey{up}) {
		t.Errorf("unix pairs %v, want the two ends paired both ways", pairs)
	}
	both := otherEnds(map[connKey]connEnds{up: {peerIno: fpm.ino}, fpm: {peerIno: up.ino}})
	if !slices.Equal(both[up], []connKey{fpm}) || !slices.Equal(both[fpm], []connKey{up}) {
		t.Errorf("unix pairs named from both ends %v, want each once", both)
	}
	a, b := connKey{pid: 1, ino: 20}, connKey{pid: 2, ino: 21}
	tcp := otherEnds(map[connKey]connEnds{a: {local: "127.0.0.1:40000", peer: "127.0.0.1:9000"}, b: {local: "127.0.0.1:9000", peer: "127.0.0.1:40000"}})
	if !slices.Equal(tcp[a], []connKey{b}) || !slices.Equal(tcp[b], []connKey{a}) {
		t.Errorf("TCP pairs %v", tcp)
	}
}

// TestFromArrival: a request begins at its bytes' arrival when that is
// known and plausible; the difference is queued.
func TestFromArrival(t *testing.T) {
	ms := uint64(1e6)
	for _, c := range []struct {
		arrived, prevEnd, begin uint64
		queued                  float64
	}{
		{arrived: 40 * ms, begin: 40 * ms},                   // the arrival was read at once: nothing queued
		{arrived: 10 * ms, begin: 10 * ms, queued: 0.03},     // read 30 ms late
		{arrived: 0, begin: 40 * ms},                         // unknown
		{arrived: 50 * ms, begin: 40 * ms},                   // later bytes: not this request's
		{arrived: 10 * ms, prevEnd: 20 * ms, begin: 40 * ms}, // before the previous answer ended: stale
		{arrived: 25 * ms, prevEnd: 20 * ms, begin: 25 * ms, queued: 0.015},
	} {
		r := &request{}
		r.begin = 40 * ms
		r.fromArrival(c.arrived, c.prevEnd)
		if r.begin != c.begin || math.Abs(r.QueuedS-c.queued) > 1e-9 {
			t.Errorf("arrived %d prev end %d: begin %d queued %v, want %d %v", c.arrived, c.prevEnd, r.begin, r.QueuedS, c.begin, c.queued)
		}
	}
}

// TestPlaceArrivals (issue 42): a connection's first request begins at its
// bytes' arrival only when the kernel matched the arrival to the connection.
// Before that, a prefork worker's new connection on a reused socket address
// kept the previous connection's arrival: Apache's stalled request was 3.98 s
// server-side against 3.36 s at the client, and a GET read at once showed
// 264 ms queued.
func TestPlaceArrivals(t *testing.T) {
	ms := uint64(1e6)
	a, b := connKey{pid: 1, ino: 10}, connKey{pid: 2, ino: 11}
	cut := func() []*request {
		reqs, _ := cutRequests([]socketCall{
			{conn: a, tid: 1, ts: 100 * ms, dur: ms, name: "read", class: "read", ret: 100},
			{conn: a, tid: 1, ts: 110 * ms, dur: ms, name: "writev", class: "write", ret: 300},
			{conn: a, tid: 1, ts: 200 * ms, dur: ms, name: "read", class: "read", ret: 100},
			{conn: a, tid: 1, ts: 205 * ms, dur: ms, name: "writev", class: "write", ret: 300},
			{conn: b, tid: 2, ts: 150 * ms, dur: ms, name: "read", class: "read", ret: 100},
			{conn: b, tid: 2, ts: 160 * ms, dur: ms, name: "writev", class: "write", ret: 300},
		})
		return reqs
	}
	starts := map[labelKey]firstBytes{
		{a, 100 * ms}: {label: "GET /a", arrived: 60 * ms},  // 40 ms before its read
		{a, 200 * ms}: {label: "GET /a", arrived: 190 * ms}, // keep-alive: after the first answer
		{b, 150 * ms}: {label: "GET /b", arrived: 149 * ms},
	}
	for _, c := range []struct {
		perConnection bool
		begins        []uint64 // by the read's time
	}{
		{true, []uint64{60 * ms, 149 * ms, 190 * ms}},
		{false, []uint64{101 * ms, 151 * ms, 190 * ms}}, // an older recording: first requests begin at their read
	} {
		reqs := cut()
		placeArrivals(reqs, starts, c.perConnection)
		var got []uint64
		for _, r := range reqs {
			got = append(got, r.begin)
			if !strings.HasPrefix(r.Label, "GET /") {
				t.Errorf("label %q", r.Label)
			}
		}
		if !slices.Equal(got, c.begins) {
			t.Errorf("per connection %v: begins %v, want %v", c.perConnection, got, c.begins)
		}
	}
}

// TestWakeupsAreNoRequests (issue 42): Apache's parent wakes a prefork
// worker blocked in accept() with a connection of its own ("OPTIONS *",
// written, closed, never read): the worker's answer is no client's request.
// A client that reads its answer, or one that is no ancestor of the worker,
// sends requests.
func TestWakeupsAreNoRequests(t *testing.T) {
	ms := uint64(1e6)
	parent, worker, other := uint32(100), uint32(101), uint32(300)
	wake, woken := connKey{pid: parent, ino: 1}, connKey{pid: worker, ino: 2}
	mine, served := connKey{pid: parent, ino: 3}, connKey{pid: worker, ino: 4}
	outside, served2 := connKey{pid: other, ino: 5}, connKey{pid: worker, ino: 6}
	calls := []socketCall{
		{conn: wake, tid: 100, ts: 0, name: "connect", class: "net", ret: -115},
		{conn: wake, tid: 100, ts: ms, name: "write", class: "write", ret: 86},
		{conn: wake, tid: 100, ts: 2 * ms, name: "close", class: "close"},
		{conn: woken, tid: 101, ts: 3 * ms, name: "accept4", class: "net", ret: 8},
		{conn: woken, tid: 101, ts: 4 * ms, name: "read", class: "read", ret: 86},
		{conn: woken, tid: 101, ts: 5 * ms, name: "writev", class: "write", ret: 200},
		// the parent as a client that waits for its answer
		{conn: mine, tid: 100, ts: 10 * ms, name: "connect", class: "net", ret: -115},
		{conn: mine, tid: 100, ts: 11 * ms, name: "write", class: "write", ret: 80},
		{conn: mine, tid: 100, ts: 12 * ms, name: "read", class: "read", ret: -11},
		{conn: served, tid: 101, ts: 13 * ms, name: "accept4", class: "net", ret: 8},
		{conn: served, tid: 101, ts: 14 * ms, name: "read", class: "read", ret: 80},
		{conn: served, tid: 101, ts: 15 * ms, name: "writev", class: "write", ret: 200},
		// a silent client outside the worker's ancestry (system-wide)
		{conn: outside, tid: 300, ts: 20 * ms, name: "connect", class: "net", ret: -115},
		{conn: outside, tid: 300, ts: 21 * ms, name: "write", class: "write", ret: 80},
		{conn: served2, tid: 101, ts: 22 * ms, name: "accept4", class: "net", ret: 8},
		{conn: served2, tid: 101, ts: 23 * ms, name: "read", class: "read", ret: 80},
		{conn: served2, tid: 101, ts: 24 * ms, name: "writev", class: "write", ret: 200},
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].conn.ino < calls[j].conn.ino })
	reqs, clients := cutRequests(calls)
	if len(reqs) != 3 {
		t.Fatalf("%d requests cut, want 3", len(reqs))
	}
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	pairs := otherEnds(map[connKey]connEnds{
		wake: {local: addr(40001), peer: addr(80)}, woken: {local: addr(80), peer: addr(40001)},
		mine: {local: addr(40002), peer: addr(80)}, served: {local: addr(80), peer: addr(40002)},
		outside: {local: addr(40003), peer: addr(80)}, served2: {local: addr(80), peer: addr(40003)},
	})
	silent := silentClients(calls, clients)
	if !silent[wake] || silent[mine] || !silent[outside] || len(silent) != 2 {
		t.Errorf("silent clients %v, want the wake-up's and the outside one's", silent)
	}
	drop := wakeups(reqs, silent, pairs, map[uint32]uint32{worker: parent, parent: 1})
	if len(drop) != 1 {
		t.Fatalf("%d wake-ups, want 1", len(drop))
	}
	for r := range drop {
		if r.conn != woken {
			t.Errorf("the request on %v taken for a wake-up, want the one on %v", r.conn, woken)
		}
	}
	if ancestorOrSelf(map[uint32]uint32{3: 2, 2: 3}, 1, 3) {
		t.Error("1 found among parents that loop")
	}
}
