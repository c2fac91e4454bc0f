package analysis

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// pgMsg is a typed PostgreSQL message.
func pgMsg(typ byte, body string) string {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
	return string(b) + body
}

// pgStartup is a start-up packet.
func pgStartup() string {
	body := "user\x00u\x00database\x00d\x00\x00"
	b := make([]byte, 8)
	binary.BigEndian.PutUint32(b, uint32(8+len(body)))
	binary.BigEndian.PutUint32(b[4:], pgProtocol3)
	return string(b) + body
}

// myPkt is a MySQL packet.
func myPkt(seq byte, body string) string {
	n := len(body)
	return string([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}) + body
}

// extended is one extended-protocol query: Parse (named or not), Bind, Describe, Execute.
func extended(name, query string) string {
	return pgMsg('P', name+"\x00"+query+"\x00\x00\x00") + pgMsg('B', "\x00"+name+"\x00\x00\x00\x00\x00\x00\x00") +
		pgMsg('D', "P\x00") + pgMsg('E', "\x00\x00\x00\x00\x00")
}

// TestFramers: each protocol's framer cuts a conversation, read by read,
// into its requests, the connection's start-up none of them.
func TestFramers(t *testing.T) {
	sync := pgMsg('S', "")
	long := "SELECT abalance FROM pgbench_accounts WHERE aid = $1 AND " + strings.Repeat("x = 1 AND ", 200) + "true"
	for _, tc := range []struct {
		name  string
		p     *Protocol
		reads []string
		kept  int // bytes kept of each read (0: all)
		want  []string
		back  []int // each request's Back, when asked
	}{
		{name: "postgres simple", p: postgresProtocol,
			reads: []string{pgStartup(), pgMsg('p', "secret\x00"), pgMsg('Q', "select * from t where a = 'x'\x00"), pgMsg('Q', "BEGIN\x00"), pgMsg('X', "")},
			want:  []string{"", "", "postgres SELECT t", "postgres BEGIN"}},
		{name: "postgres extended, one request per Sync", p: postgresProtocol,
			reads: []string{pgStartup(), extended("", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2") + sync},
			want:  []string{"", "postgres UPDATE pgbench_accounts"}},
		{name: "postgres pipelined", p: postgresProtocol,
			reads: []string{extended("", "SELECT 1") + sync + extended("", "INSERT INTO h VALUES ($1)") + sync + pgMsg('Q', "COMMIT\x00")},
			want:  []string{"postgres SELECT", "postgres INSERT h", "postgres COMMIT"}},
		{name: "postgres prepared statements by name", p: postgresProtocol,
			reads: []string{extended("P0_1", "SELECT abalance FROM pgbench_accounts WHERE aid = $1") + sync,
				pgMsg('B', "\x00P0_1\x00\x00\x00\x00\x00\x00\x00") + pgMsg('E', "\x00\x00\x00\x00\x00") + sync},
			want: []string{"postgres SELECT pgbench_accounts", "postgres SELECT pgbench_accounts"}},
		{name: "postgres message split across reads", p: postgresProtocol,
			reads: splitAt(extended("", "DELETE FROM q WHERE id = $1")+sync+pgMsg('Q', "SELECT 2\x00"), 3, 40),
			want:  []string{"postgres DELETE q", "postgres SELECT"}, back: []int{2, 0}},
		{name: "postgres read longer than kept", p: postgresProtocol, kept: 1024,
			reads: []string{extended("", long) + sync, pgMsg('Q', "SELECT 3\x00")},
			want:  []string{"postgres SELECT pgbench_accounts", "postgres SELECT"}},
		{name: "mysql", p: mysqlProtocol,
			reads: []string{myPkt(1, strings.Repeat("\x00", 4)+"\x0f\xa2\x00\x00"+strings.Repeat("\x00", 28)+"root\x00"),
				myPkt(0, "\x03UPDATE t SET v = 'secret' WHERE id = 1"), myPkt(0, "\x16SELECT v FROM t WHERE id = ?"),
				myPkt(0, "\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00"), myPkt(0, "\x19\x01\x00\x00\x00") + myPkt(0, "\x0e"), myPkt(0, "\x01")},
			want: []string{"", "mysql UPDATE t", "mysql PREPARE SELECT t", "mysql SELECT t", "mysql PING"}},
		{name: "mysql, each packet's head read alone", p: mysqlProtocol,
			reads: append(splitAt(myPkt(0, "\x03SELECT 1"), 4), splitAt(myPkt(0, "\x16INSERT INTO h VALUES (?)")+myPkt(0, "\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00"), 4, 29, 33)...),
			want:  []string{"mysql SELECT", "mysql PREPARE INSERT h", "mysql INSERT h"}, back: []int{1, 1, 1}},
		{name: "redis pipelined", p: redisProtocol,
			reads: []string{strings.Repeat("*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n", 3) + "*2\r\n$3\r\nGET\r\n$1\r\nk", "\r\n", "PING\r\n"},
			want:  []string{"redis SET", "redis SET", "redis SET", "redis GET", "redis PING"}, back: []int{0, 0, 0, 1, 0}},
		{name: "redis bulk string across reads", p: redisProtocol,
			reads: splitAt("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000\r\n"+strings.Repeat("v", 2000)+"\r\n*1\r\n$4\r\nPING\r\n", 30, 1500),
			want:  []string{"redis SET", "redis PING"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.p.NewFramer()
			var got []string
			var back []int
			for _, r := range tc.reads {
				data := []byte(r)
				if tc.kept > 0 && len(data) > tc.kept {
					data = data[:tc.kept]
				}
				for _, fr := range f.Feed(data, len(r)) {
					if fr.Setup {
						fr.Label = ""
					}
					got = append(got, fr.Label)
					back = append(back, fr.Back)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("requests %q, want %q", got, tc.want)
			}
			if tc.back != nil && !slices.Equal(back, tc.back) {
				t.Errorf("backs %v, want %v", back, tc.back)
			}
		})
	}
}

func splitAt(s string, at ...int) []string {
	var out []string
	prev := 0
	for _, a := range at {
		out = append(out, s[prev:a])
		prev = a
	}
	return append(out, s[prev:])
}

// TestDetect: each protocol knows its own connections' first bytes, and
// only its own.
func TestDetect(t *testing.T) {
	for in, want := range map[string]string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n":                     "http",
		pgStartup():                                             "postgres",
		pgMsg('Q', "SELECT 1\x00"):                              "postgres",
		"\x00\x00\x00\x08\x04\xd2\x16\x2f":                      "postgres", // SSLRequest
		myPkt(0, "\x03SELECT 1"):                                "mysql",
		myPkt(1, "\x0f\xa2\x0a\x00"+strings.Repeat("\x00", 40)): "mysql",
		"*1\r\n$4\r\nPING\r\n":                                  "redis",
		"\x01\x01\x00\x01\x00\x08\x00\x00\x00\x01\x00":          "",
	} {
		got := ""
		if p := protocolOf([]byte(in)); p != nil {
			got = p.Name
		}
		if got != want {
			t.Errorf("protocolOf(%q) = %q, want %q", in, got, want)
		}
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
	sync := pgMsg('S', "")
	pg := []string{pgStartup(), extended("", "SELECT 1") + sync + extended("", "SELECT 2") + sync, pgMsg('Q', "SELECT 3\x00"), pgMsg('Q', "SELECT 4\x00")}
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

// FuzzFramers: a connection's bytes are a client's, anyone's. No framer
// panics on them, however they are cut into reads or kept, and each read
// gives at most as many requests as it has bytes.
func FuzzFramers(f *testing.F) {
	for _, s := range []string{
		pgStartup() + pgMsg('Q', "SELECT 1\x00"), extended("s", "UPDATE t SET a = $1") + pgMsg('S', ""),
		myPkt(0, "\x03SELECT * FROM t") + myPkt(0, "\x17\xff\xff\xff\xff"), myPkt(1, strings.Repeat("\x00", 40)),
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "PING\r\n", "*-1\r\n$-5\r\n",
	} {
		f.Add([]byte(s), uint8(3), uint8(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut, kept uint8) {
		for _, p := range protocols {
			if p.NewFramer == nil {
				continue
			}
			fr := p.NewFramer()
			for rest := b; len(rest) > 0; {
				n := min(len(rest), int(cut)+1)
				data := rest[:n]
				if kept > 0 && int(kept) < n {
					data = data[:kept]
				}
				if got := fr.Feed(data, n); len(got) > n {
					t.Fatalf("%s: %d requests from %d bytes", p.Name, len(got), n)
				}
				rest = rest[n:]
			}
		}
	})
}
