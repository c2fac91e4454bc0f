package scenarios

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// Every second of a program that serves no one is its own (issue 49): a
// wait of a batch program is never "idle", waiting for work. These shapes
// read as idle before: a select() that timed out on a pipe nobody wrote,
// alone or in threads the main thread joins, and dig's wait for a UDP
// answer.

// timedOutSelect waits in select() on a pipe nobody writes until its
// timeout, in the main thread or in four threads the main thread joins.
const timedOutSelect = `
import os, select, sys, threading
def wait():
    r, w = os.pipe()
    select.select([r], [], [], float(sys.argv[1]))
if sys.argv[2] == "threads":
    ts = [threading.Thread(target=wait) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
else:
    wait()
`

func TestTimedOutWaitIsSleep(t *testing.T) {
	waitsOnly(t)
	script := filepath.Join(t.TempDir(), "timed_wait.py") // not select.py: it would shadow the module
	if err := os.WriteFile(script, []byte(timedOutSelect), 0o644); err != nil {
		t.Fatal(err)
	}
	const timeout = 1.5
	for _, shape := range []string{"main", "threads"} {
		t.Run(shape, func(t *testing.T) {
			client := []string{harness.Python(t), script, fmt.Sprint(timeout), shape}
			explainWays(t, func(*testing.T) {}, client, func(t *testing.T, x *explanation, log string) {
				if x.Verdict.Reason != "sleep" {
					t.Errorf("verdict %q (%s), want sleep: a select() that timed out is the program's own wait\n%s",
						x.Verdict.Reason, x.Verdict.Summary, log)
				}
				if idle := x.Critical.ByReason["idle"]; idle > 0 {
					t.Errorf("%.3f s idle on the path of a program that serves no one\n%s", idle, log)
				}
				// attach begins while it waits already: most of what is left
				if sleep, want := x.Critical.ByReason["sleep"], 0.8*min(x.WallS, timeout); sleep < want {
					t.Errorf("sleep on the path %.2f s, want at least %.2f s\n%s", sleep, want, log)
				}
				checkRanked(t, x, log)
			})
		})
	}
}

// slowUDPServer answers each datagram after delay, from a free loopback
// port it prints: a resolver that is slow to answer.
const slowUDPServer = `
import socket, sys, time
delay = float(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    q, addr = s.recvfrom(512)
    time.sleep(delay)
    # the question back, flagged as a reply with no answer (NXDOMAIN)
    s.sendto(q[:2] + b"\x81\x83" + q[4:6] + b"\x00" * 6 + q[12:], addr)
`

// A slow DNS answer over UDP is the network, with the path into the
// resolver that answered, as for TCP: dig's threads wait in epoll_wait on a
// socket with no connection, and its main thread for their signal.
func TestSlowDNSOverUDP(t *testing.T) {
	waitsOnly(t)
	dig, err := exec.LookPath("dig")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("dig is missing (make deps installs bind9-dnsutils)")
		}
		t.Skip("dig is missing")
	}
	script := filepath.Join(t.TempDir(), "slow_dns.py")
	if err := os.WriteFile(script, []byte(slowUDPServer), 0o644); err != nil {
		t.Fatal(err)
	}
	const delay = 1500 * time.Millisecond
	cmd := exec.Command(harness.Python(t), script, fmt.Sprint(delay.Seconds()))
	port := startedSaying(t, cmd)
	client := []string{dig, "+tries=1", "+time=10", "@127.0.0.1", "-p", port, "example.com"}
	start := time.Now()
	if out, err := exec.Command(client[0], client[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("dig untraced: %v\n%s", err, out)
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("dig untraced took %v, less than the server's %v", took, delay)
	}
	explainWays(t, func(*testing.T) {}, client, func(t *testing.T, x *explanation, log string) {
		checkClientWait(t, x, log, cmd.Process.Pid, delay)
	})
}

// A server attached to while no request comes waited for work, not for
// itself: its listening socket says it serves, though no call of its is
// seen in the window (the threaded server polls with a timeout and accepts
// only when a connection is there).
func TestAttachedIdleServerIsIdle(t *testing.T) {
	waitsOnly(t)
	server, _ := startSlowServer(t, time.Second)
	x, log := attachExplained(t, server, 2*time.Second)
	if x.Verdict.Basis != "threads" {
		t.Errorf("verdict's basis %q (%s), want threads: a server with no request mostly waited for work\n%s",
			x.Verdict.Basis, x.Verdict.Summary, log)
	}
	if idle := x.Critical.ByReason["idle"]; idle < 0.9*x.WallS {
		t.Errorf("idle %.2f s of %.2f s on the path\n%s", idle, x.WallS, log)
	}
}
