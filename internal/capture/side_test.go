package capture

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

func TestInetSide(t *testing.T) {
	eph := portRange{32768, 60999}
	for _, c := range []struct {
		l, r uint16
		want event.Side
	}{
		{8080, 45000, event.SideServer}, // a server answering a client's connection
		{45000, 8080, event.SideClient}, // the client's request
		{5432, 1234, event.SideClient},  // neither ephemeral: the lower port serves
		{1234, 5432, event.SideServer},
		{40000, 50000, event.SideServer}, // both ephemeral: the lower port serves
		{0, 8080, event.SideUnknown},
		{8080, 0, event.SideUnknown},
		{9000, 9000, event.SideUnknown},
	} {
		if got := inetSide(c.l, c.r, nil, eph); got != c.want {
			t.Errorf("inetSide(%d, %d) = %d, want %d", c.l, c.r, got, c.want)
		}
	}
}

func TestListeningPortSide(t *testing.T) {
	eph := portRange{32768, 60999}
	// a test server on an ephemeral port, older than the capture: its
	// listener says which end is the server's, whichever port is lower
	listening := map[uint16]bool{42531: true}
	if got := inetSide(42531, 35000, listening, eph); got != event.SideServer {
		t.Errorf("the listener's port: %d, want server", got)
	}
	if got := inetSide(35000, 42531, listening, eph); got != event.SideClient {
		t.Errorf("the port connected to a listener: %d, want client", got)
	}
}

func TestSeenConnectionsSide(t *testing.T) {
	inet := whyslowFileRef{Kind: uint32(event.KindSocketInet)}
	// both ports ephemeral, the server's the higher: the ports would say client
	if got := sideOf(whyslowWakerSock{F: inet, Lport: 40000, Rport: 35000, End: sockAccepted}); got != event.SideServer {
		t.Errorf("an accepted socket: %d, want server", got)
	}
	if got := sideOf(whyslowWakerSock{F: inet, Lport: 35000, Rport: 40000, End: sockConnected}); got != event.SideClient {
		t.Errorf("a connected socket: %d, want client", got)
	}
}

func TestUnixSide(t *testing.T) {
	unix := whyslowFileRef{Kind: uint32(event.KindSocketUnix)}
	if got := sideOf(whyslowWakerSock{F: unix, Bound: 1}); got != event.SideServer {
		t.Errorf("a bound unix socket: %d, want server", got)
	}
	if got := sideOf(whyslowWakerSock{F: unix}); got != event.SideClient {
		t.Errorf("an unbound unix socket: %d, want client", got)
	}
	if got := sideOf(whyslowWakerSock{F: whyslowFileRef{Kind: uint32(event.KindPipe)}}); got != event.SideUnknown {
		t.Errorf("a pipe: %d, want unknown", got)
	}
}
