package protocol

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/protocol/protocoltest"
	"github.com/whyslow/whyslow/internal/event"
)

// TestFramers: each protocol's framer cuts a conversation, read by read,
// into its requests, the connection's start-up none of them.
func TestFramers(t *testing.T) {
	sync := protocoltest.Postgres('S', "")
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
			reads: []string{protocoltest.PostgresStartup(), protocoltest.Postgres('p', "secret\x00"), protocoltest.Postgres('Q', "select * from t where a = 'x'\x00"), protocoltest.Postgres('Q', "BEGIN\x00"), protocoltest.Postgres('X', "")},
			want:  []string{"", "", "postgres SELECT t", "postgres BEGIN"}},
		{name: "postgres extended, one request per Sync", p: postgresProtocol,
			reads: []string{protocoltest.PostgresStartup(), protocoltest.PostgresExtended("", "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2") + sync},
			want:  []string{"", "postgres UPDATE pgbench_accounts"}},
		{name: "postgres pipelined", p: postgresProtocol,
			reads: []string{protocoltest.PostgresExtended("", "SELECT 1") + sync + protocoltest.PostgresExtended("", "INSERT INTO h VALUES ($1)") + sync + protocoltest.Postgres('Q', "COMMIT\x00")},
			want:  []string{"postgres SELECT", "postgres INSERT h", "postgres COMMIT"}},
		{name: "postgres prepared statements by name", p: postgresProtocol,
			reads: []string{protocoltest.PostgresExtended("P0_1", "SELECT abalance FROM pgbench_accounts WHERE aid = $1") + sync,
				protocoltest.Postgres('B', "\x00P0_1\x00\x00\x00\x00\x00\x00\x00") + protocoltest.Postgres('E', "\x00\x00\x00\x00\x00") + sync},
			want: []string{"postgres SELECT pgbench_accounts", "postgres SELECT pgbench_accounts"}},
		{name: "postgres message split across reads", p: postgresProtocol,
			reads: splitAt(protocoltest.PostgresExtended("", "DELETE FROM q WHERE id = $1")+sync+protocoltest.Postgres('Q', "SELECT 2\x00"), 3, 40),
			want:  []string{"postgres DELETE q", "postgres SELECT"}, back: []int{2, 0}},
		{name: "postgres read longer than kept", p: postgresProtocol, kept: event.PayloadLen,
			reads: []string{protocoltest.PostgresExtended("", long) + sync, protocoltest.Postgres('Q', "SELECT 3\x00")},
			want:  []string{"postgres SELECT pgbench_accounts", "postgres SELECT"}},
		{name: "mysql", p: mysqlProtocol,
			reads: []string{protocoltest.MySQL(1, strings.Repeat("\x00", 4)+"\x0f\xa2\x00\x00"+strings.Repeat("\x00", 28)+"root\x00"),
				protocoltest.MySQL(0, "\x03UPDATE t SET v = 'secret' WHERE id = 1"), protocoltest.MySQL(0, "\x16SELECT v FROM t WHERE id = ?"),
				protocoltest.MySQL(0, "\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00"), protocoltest.MySQL(0, "\x19\x01\x00\x00\x00") + protocoltest.MySQL(0, "\x0e"), protocoltest.MySQL(0, "\x01")},
			want: []string{"", "mysql UPDATE t", "mysql PREPARE SELECT t", "mysql SELECT t", "mysql PING"}},
		{name: "mysql, each packet's head read alone", p: mysqlProtocol,
			reads: append(splitAt(protocoltest.MySQL(0, "\x03SELECT 1"), 4), splitAt(protocoltest.MySQL(0, "\x16INSERT INTO h VALUES (?)")+protocoltest.MySQL(0, "\x17\x01\x00\x00\x00\x00\x01\x00\x00\x00"), 4, 29, 33)...),
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
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n":                                  "http",
		protocoltest.PostgresStartup():                                       "postgres",
		protocoltest.Postgres('Q', "SELECT 1\x00"):                           "postgres",
		"\x00\x00\x00\x08\x04\xd2\x16\x2f":                                   "postgres", // SSLRequest
		protocoltest.MySQL(0, "\x03SELECT 1"):                                "mysql",
		protocoltest.MySQL(1, "\x0f\xa2\x0a\x00"+strings.Repeat("\x00", 40)): "mysql",
		"*1\r\n$4\r\nPING\r\n":                                               "redis",
		"\x01\x01\x00\x01\x00\x08\x00\x00\x00\x01\x00":                       "",
	} {
		got := ""
		if p := Detect([]byte(in)); p != nil {
			got = p.Name
		}
		if got != want {
			t.Errorf("Detect(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzFramers: a connection's bytes are a client's, anyone's. No framer
// panics on them, however they are cut into reads or kept, and each read
// gives at most as many requests as it has bytes.
func FuzzFramers(f *testing.F) {
	for _, s := range []string{
		protocoltest.PostgresStartup() + protocoltest.Postgres('Q', "SELECT 1\x00"), protocoltest.PostgresExtended("s", "UPDATE t SET a = $1") + protocoltest.Postgres('S', ""),
		protocoltest.MySQL(0, "\x03SELECT * FROM t") + protocoltest.MySQL(0, "\x17\xff\xff\xff\xff"), protocoltest.MySQL(1, strings.Repeat("\x00", 40)),
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", "PING\r\n", "*-1\r\n$-5\r\n",
	} {
		f.Add([]byte(s), uint8(3), uint8(0))
	}
	if b, err := os.ReadFile("testdata/nginx-fastcgi.bin"); err == nil {
		f.Add(b, uint8(7), uint8(0))
		f.Add(b, uint8(200), uint8(100))
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
