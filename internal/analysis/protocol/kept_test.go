package protocol

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/protocol/protocoltest"
	"github.com/whyslow/whyslow/internal/event"
)

// The kernel sends the first bytes of a server's reads
// (event.PayloadKept, the rule bpf/conversation.h is generated from): a
// connection's protocol, each request's label and each framer's cut are the
// same from those bytes as from the whole reads, for conversations of each
// protocol whose reads are longer than PayloadLen or PayloadReadLen. (A
// pipelined batch longer than PayloadReadLen loses the requests past it:
// their lengths are not sent.)
func TestFramersReadWhatTheKernelKeeps(t *testing.T) {
	if event.PayloadLen < StartBytes {
		t.Fatalf("the kernel keeps %d bytes of a first read, Detect reads %d", event.PayloadLen, StartBytes)
	}
	fcgi, err := os.ReadFile("testdata/nginx-fastcgi.bin")
	if err != nil {
		t.Fatal(err)
	}
	sync := protocoltest.Postgres('S', "")
	long := "SELECT abalance FROM pgbench_accounts WHERE aid = $1 AND " + strings.Repeat("x = 1 AND ", 200) + "true"
	for _, tc := range []struct {
		name  string
		reads []string
	}{
		{"http, headers past the first bytes", []string{"GET /orders/42?user=secret HTTP/1.1\r\nHost: shop\r\n" +
			strings.Repeat("X-Header: "+strings.Repeat("v", 40)+"\r\n", 30) + "\r\n"}},
		{"postgres, a statement longer than kept", []string{protocoltest.PostgresStartup(),
			protocoltest.PostgresExtended("", long) + sync, protocoltest.Postgres('Q', "SELECT 3\x00")}},
		{"postgres pipelined past the first bytes", []string{strings.Repeat(protocoltest.PostgresExtended("", "INSERT INTO h VALUES ($1, $2, $3)")+sync, 12)}},
		{"mysql, a query longer than kept", []string{protocoltest.MySQL(1, "\x0f\xa2\x0a\x00"+strings.Repeat("\x00", 40)),
			protocoltest.MySQL(0, "\x03UPDATE t SET v = '"+strings.Repeat("s", 2000)+"' WHERE id = 1"), protocoltest.MySQL(0, "\x0e")}},
		// a batch longer than PayloadReadLen loses the requests past it
		{"redis pipelined", []string{strings.Repeat("*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$3\r\nxxx\r\n", 20), "*1\r\n$4\r\nPING\r\n"}},
		{"fastcgi", []string{string(fcgi), string(fcgi)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, kept := Detect([]byte(tc.reads[0])), Detect(keptOf(tc.reads[0]))
			if whole == nil || kept != whole {
				t.Fatalf("Detect: %v from the kept bytes, %v from the whole read", kept, whole)
			}
			if whole.NewFramer == nil {
				if got, want := Label(keptOf(tc.reads[0]), false), Label([]byte(tc.reads[0]), false); got != want || got == "" {
					t.Errorf("label %q from the kept bytes, %q from the whole read", got, want)
				}
				return
			}
			if got, want := frames(whole, tc.reads, true), frames(whole, tc.reads, false); !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("frames %v from the kept bytes, %v from the whole reads", got, want)
			}
		})
	}
}

// keptOf is what the kernel sends of a read.
func keptOf(read string) []byte { return []byte(read[:event.PayloadKept(len(read))]) }

// frames are the requests p's framer cuts from reads, each read's bytes kept
// as the kernel keeps them or whole.
func frames(p *Protocol, reads []string, kept bool) []Frame {
	f := p.NewFramer()
	var out []Frame
	for _, r := range reads {
		data := []byte(r)
		if kept {
			data = keptOf(r)
		}
		out = append(out, f.Feed(data, len(r))...)
	}
	return out
}
