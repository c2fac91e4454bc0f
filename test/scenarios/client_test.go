package scenarios

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// Across processes (issue 24): a client waiting in poll() on its server is
// waiting on the network and on that server, never "waiting for work", and
// the critical path goes on into the server's process.

// slowServer is a threaded HTTP server on a free loopback port that answers
// each request after delay.
const slowServer = `
import http.server, socketserver, sys, time
delay = float(sys.argv[1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(delay)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
`

// startSlowServer starts slowServer and returns its pid and URL; the test
// stops it.
func startSlowServer(t *testing.T, delay time.Duration) (int, string) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "slow_server.py")
	if err := os.WriteFile(script, []byte(slowServer), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(harness.Python(t), script, fmt.Sprint(delay.Seconds()))
	port := startedSaying(t, cmd)
	return cmd.Process.Pid, "http://127.0.0.1:" + port + "/"
}

func TestClientWaitsOnItsServer(t *testing.T) {
	waitsOnly(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is missing (make deps installs it)")
		}
		t.Skip("curl is missing")
	}
	const delay = 1500 * time.Millisecond
	server, url := startSlowServer(t, delay)
	clients := map[string][]string{
		"curl": {curl, "-s", "-o", "/dev/null", url},
		// a goroutine parks on a futex while the runtime's netpoller thread
		// waits in epoll_wait: the futex is a hand-off, not a lock
		"go net/http": {goClient(t), url},
		// urllib with a timeout waits in poll(), as requests does
		"python urllib": {harness.Python(t), "-c", "import urllib.request; urllib.request.urlopen('" + url + "', timeout=30).read()"},
	}
	for name, args := range clients {
		t.Run(name, func(t *testing.T) {
			// Untraced first: the wait exists and is as long as the server makes it.
			start := time.Now()
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%s untraced: %v\n%s", name, err, out)
			}
			if took := time.Since(start); took < delay {
				t.Fatalf("%s untraced took %v, less than the server's %v", name, took, delay)
			}

			explainWays(t, func(*testing.T) {}, args, func(t *testing.T, x *explanation, stderr string) {
				checkClientWait(t, x, stderr, server, delay)
			})
		})
	}
}

// checkClientWait: a client's wait on its server is the network, on the
// server's address, with the path into the server.
func checkClientWait(t *testing.T, x *explanation, stderr string, server int, delay time.Duration) {
	t.Helper()
	if x.Verdict.Reason != "network" {
		t.Fatalf("verdict %q, want network (a client waiting on its server)\n%s", x.Verdict.Reason, stderr)
	}
	// Most of the window (attach's begins while the client already waits)
	if net, want := x.Critical.ByReason["network"], 0.8*min(x.WallS, delay.Seconds()); net < want {
		t.Errorf("network on the critical path %.2f s, want at least %.2f s of the server's %.2f s\n%s", net, want, delay.Seconds(), stderr)
	}
	if idle := x.Critical.ByReason["idle"]; idle > 0.1 {
		t.Errorf("%.2f s idle on the critical path: a client's wait on its server is no wait for work\n%s", idle, stderr)
	}
	checkRanked(t, x, stderr)
	// The path went on into the server, and the server is named.
	var into bool
	for _, l := range x.Critical.Chain {
		into = into || l.WorkerPID == uint32(server) && l.WorkerRole == "outside"
	}
	if !into {
		t.Errorf("the chain does not go into the server (pid %d) as outside: %+v\n%s", server, x.Critical.Chain, stderr)
	}
	var blamed bool
	for _, b := range x.Blame {
		blamed = blamed || b.PID == uint32(server) && b.Activity == "network" && strings.HasPrefix(b.Object, "127.0.0.1:")
	}
	if !blamed {
		t.Errorf("the server (pid %d) is not blamed for the network wait on its address: %+v\n%s", server, x.Blame, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("pid %d", server)) {
		t.Errorf("the text does not name the server (pid %d):\n%s", server, stderr)
	}
}

// goHTTPClient fetches a URL with net/http.
const goHTTPClient = `package main

import (
	"io"
	"net/http"
	"os"
)

func main() {
	r, err := http.Get(os.Args[1])
	if err != nil {
		os.Exit(1)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
}
`

// goClient builds goHTTPClient with the Go toolchain that builds whyslow.
func goClient(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(goHTTPClient), 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "client")
	cmd := exec.Command("go", "build", "-o", exe, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go client: %v\n%s", err, out)
	}
	return exe
}

// TestAttachOpenConnectionBytes: attached to a client whose connection is
// older than the capture and still open at its end, the default level names
// the peer and its bytes (the kernel's totals, read over sock_diag as capture
// ends), not socket:[ino] and 0 B (issue 26).
func TestAttachOpenConnectionBytes(t *testing.T) {
	waitsOnly(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 100)
		c.Read(b)
		time.Sleep(1500 * time.Millisecond)
		c.Write(make([]byte, 1000))
		time.Sleep(10 * time.Second)
	}()
	client := exec.Command(harness.Python(t), "-c", `import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"hello")
s.recv(2000)
time.sleep(10)`, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { client.Process.Kill(); client.Wait() }()
	time.Sleep(300 * time.Millisecond) // connected, waiting for the answer
	x, text := attachExplained(t, client.Process.Pid, 3*time.Second)
	peer := l.Addr().String()
	var found bool
	for _, n := range x.Network {
		if n.Peer == peer {
			found = true
			if !n.BytesKnown || n.BytesIn != 1000 || n.BytesOut != 5 {
				t.Errorf("peer %s: %+v, want 1000 B in, 5 B out", peer, n)
			}
		}
	}
	if !found {
		t.Errorf("the peer %s is not among %+v:\n%s", peer, x.Network, text)
	}
}
