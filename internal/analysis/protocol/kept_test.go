package protocol

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/protocol/protocoltest"
	"github.com/whyslow/whyslow/internal/event"
)

// The kernel keeps the first bytes of a server's turns (event.PayloadKept,
// the rule bpf/conversation.h is generated from: of a turn, its reads
// between two of the server's writes, the first PayloadLen bytes, of a long
// first read up to PayloadBatchLen, of each later read PayloadHeadLen): a
// connection's protocol, each request's label and each framer's cut are the
// same from those bytes as from the whole reads, for conversations of each
// protocol whose reads are longer than the kernel keeps, or whose server
// reads a message's header and its body apart. (A pipelined batch longer
// than PayloadBatchLen loses the requests past it: their lengths are not
// kept.)
func TestFramersReadWhatTheKernelKeeps(t *testing.T) {
	if event.PayloadLen < StartBytes {
		t.Fatalf("the kernel keeps %d bytes of a turn, Detect reads %d", event.PayloadLen, StartBytes)
	}
	fcgi, err := os.ReadFile("testdata/nginx-fastcgi.bin")
	if err != nil {
		t.Fatal(err)
	}
	sync := protocoltest.Postgres('S', "")
	long := "SELECT abalance FROM pgbench_accounts WHERE aid = $1 AND " + strings.Repeat("x = 1 AND ", 200) + "true"
	handshake := protocoltest.MySQL(1, "\x0f\xa2\x0a\x00"+strings.Repeat("\x00", 40))
	update := protocoltest.MySQL(0, "\x03UPDATE t SET v = '"+strings.Repeat("s", 2000)+"' WHERE id = 1")
	selectWT := protocoltest.MySQL(0, "\x03SELECT v FROM w.t WHERE id = 2")
	for _, tc := range []struct {
		name  string
		turns [][]string // each turn's reads
	}{
		{"http, headers past the first bytes", [][]string{{"GET /orders/42?user=secret HTTP/1.1\r\nHost: shop\r\n" +
			strings.Repeat("X-Header: "+strings.Repeat("v", 40)+"\r\n", 30) + "\r\n"}}},
		{"postgres, a statement longer than kept", [][]string{{protocoltest.PostgresStartup()},
			{protocoltest.PostgresExtended("", long) + sync}, {protocoltest.Postgres('Q', "SELECT 3\x00")}}},
		{"postgres pipelined past the first bytes", [][]string{{strings.Repeat(protocoltest.PostgresExtended("", "INSERT INTO h VALUES ($1, $2, $3)")+sync, 12)}}},
		{"mysql, a query longer than kept", [][]string{{handshake}, {update}, {protocoltest.MySQL(0, "\x0e")}}},
		// MariaDB reads a packet's 4-byte header, then its body
		{"mysql, headers read apart", [][]string{{handshake[:4], handshake[4:]}, {update[:4], update[4:]},
			{selectWT[:4], selectWT[4:]}}},
		// a batch longer than PayloadBatchLen loses the requests past it
		{"redis pipelined", [][]string{{strings.Repeat("*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n", 20)}, {"*1\r\n$4\r\nPING\r\n"}}},
		{"redis, a command longer than kept", [][]string{{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000\r\n" + strings.Repeat("v", 3000) + "\r\n"}, {"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"}}},
		{"fastcgi", [][]string{{string(fcgi)}, {string(fcgi)}}},
		// PHP-FPM reads each record's header, then its content
		{"fastcgi, record by record", [][]string{byRecord(t, fcgi), byRecord(t, fcgi)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// a connection's protocol is known by its first reads, joined
			start := strings.Join(tc.turns[0][:min(len(tc.turns[0]), StartReads)], "")
			whole, kept := Detect([]byte(start)), Detect(bytes.Join(keptOf(tc.turns[:1])[:min(len(tc.turns[0]), StartReads)], nil))
			if whole == nil || kept != whole {
				t.Fatalf("Detect: %v from the kept bytes, %v from the whole read", kept, whole)
			}
			if whole.NewFramer == nil {
				if got, want := Label(keptOf(tc.turns)[0], false), Label([]byte(start), false); got != want || got == "" {
					t.Errorf("label %q from the kept bytes, %q from the whole read", got, want)
				}
				return
			}
			if got, want := frames(whole, tc.turns, true), frames(whole, tc.turns, false); !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("frames %v from the kept bytes, %v from the whole reads", got, want)
			}
		})
	}
}

// keptOf is what the kernel keeps of each read of turns, in order.
func keptOf(turns [][]string) [][]byte {
	var out [][]byte
	for _, reads := range turns {
		var turn event.Turn
		for i, r := range reads {
			out = append(out, []byte(r[:turn.Read(i == 0, len(r))]))
		}
	}
	return out
}

// frames are the requests p's framer cuts from the reads of turns, each
// read's bytes kept as the kernel keeps them or whole.
func frames(p *Protocol, turns [][]string, kept bool) []Frame {
	f := p.NewFramer()
	var out []Frame
	k := keptOf(turns)
	for _, reads := range turns {
		for _, r := range reads {
			data := []byte(r)
			if kept {
				data, k = k[0], k[1:]
			}
			out = append(out, f.Feed(data, len(r))...)
		}
	}
	return out
}

// byRecord is a FastCGI request read as PHP-FPM reads it: each record's
// header, then its content and padding.
func byRecord(t *testing.T, b []byte) []string {
	var reads []string
	for len(b) > 0 {
		if len(b) < 8 {
			t.Fatalf("%d bytes left, short of a record's header", len(b))
		}
		n := 8 + int(b[4])<<8 + int(b[5]) + int(b[6])
		reads = append(reads, string(b[:8]))
		if n > 8 {
			reads = append(reads, string(b[8:n]))
		}
		b = b[n:]
	}
	return reads
}
