package scenarios

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/whyslow/whyslow/test/harness"
)

// A wait is given the waker of another only when it is the same wait: the
// accuracy generator's misses (ACCURACY.md, seeds 267 and 122), each the
// dominant block's wait given the reason and peer of a later, different
// wait of the same thread.

// answeringServers answers each request, a number of seconds, after them:
// over a Unix stream socket (its path the first argument) and over TCP on a
// free loopback port, which it prints. A thread per connection, made when
// the connection is accepted.
const answeringServers = `
import socket, socketserver, sys, threading, time
class H(socketserver.StreamRequestHandler):
    def handle(self):
        time.sleep(float(self.rfile.readline()))
        self.wfile.write(b"ok\n")
class U(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
class T(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
u = U(sys.argv[1], H)
t = T(("127.0.0.1", 0), H)
threading.Thread(target=u.serve_forever, daemon=True).start()
print(t.server_address[1], flush=True)
t.serve_forever()
`

// startAnsweringServers starts answeringServers and returns its socket's
// path and its TCP port; the test stops it.
func startAnsweringServers(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "answering_servers.py")
	if err := os.WriteFile(script, []byte(answeringServers), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "answers.sock")
	port := startedSaying(t, exec.Command(harness.Python(t), script, sock))
	return sock, port
}

// timedOutThenRequest selects 1.6 s on a UDP socket nobody sends to, then
// asks the server over its Unix socket for an answer after 0.1 s and
// selects on that connection until it comes.
const timedOutThenRequest = `
import select, socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
select.select([u], [], [], 1.6)
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"0.1\n")
select.select([s], [], [])
`

// Seed 267: the timed-out select is the program's own sleep. Joined to the
// later select's answer, it took the server's reason, and the path went
// into the server's handler thread for 1.3 s, before that thread existed,
// and called it CPU. 1.6 s here: attach, 300 ms in, still sees more than a
// tick of it (a poll of a second or less before an answer is one, poll_runs).
func TestTimedOutPollBeforeAnotherRequest(t *testing.T) {
	waitsOnly(t)
	sock, _ := startAnsweringServers(t)
	script := filepath.Join(t.TempDir(), "timed_out_then_request.py")
	if err := os.WriteFile(script, []byte(timedOutThenRequest), 0o644); err != nil {
		t.Fatal(err)
	}
	const timeout = 1.6
	explainWays(t, func(*testing.T) {}, []string{harness.Python(t), script, sock}, func(t *testing.T, x *explanation, log string) {
		if x.Verdict.Reason != "sleep" {
			t.Errorf("verdict %q (%s), want sleep: the select that timed out waited on nobody\n%s", x.Verdict.Reason, x.Verdict.Summary, log)
		}
		// attach begins while it waits already: most of what is left
		if sleep, want := x.Critical.ByReason["sleep"], 0.8*min(x.WallS-0.1, timeout); sleep < want {
			t.Errorf("sleep on the path %.2f s, want at least %.2f s\n%s", sleep, want, log)
		}
		if cpu := x.Critical.ByReason["cpu"]; cpu > 0.3 {
			t.Errorf("%.2f s cpu on the path: the program computed little, the server's handler did not exist yet\n%s", cpu, log)
		}
		checkRanked(t, x, log)
	})
}

// pipeThenConnection: a parent selects on a pipe its child writes to after
// 1.3 s of computing, then talks to a server over TCP (its port the first
// argument).
const pipeThenConnection = `
import os, select, socket, sys, time
r, w = os.pipe(); pid = os.fork()
if pid == 0:
    end = time.monotonic() + 1.3
    while time.monotonic() < end: pass
    os.write(w, b"done"); os._exit(0)
os.close(w); select.select([r], [], []); os.read(r, 16); os.waitpid(pid, 0)
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(b"0.1\n"); s.recv(64)
`

// Seed 122: the parent's select, ended by its child's write to the pipe, is
// a wait on the child (ipc), not the network because the program opens a
// TCP connection later; the path goes into the child's CPU.
func TestPollOnAChildsPipeThenAConnection(t *testing.T) {
	requireRoot(t)
	_, port := startAnsweringServers(t)
	script := filepath.Join(t.TempDir(), "pipe_then_connection.py")
	if err := os.WriteFile(script, []byte(pipeThenConnection), 0o644); err != nil {
		t.Fatal(err)
	}
	const compute = 1.3
	explainWays(t, func(*testing.T) {}, []string{harness.Python(t), script, port}, func(t *testing.T, x *explanation, log string) {
		if x.Verdict.Reason != "cpu" {
			t.Errorf("verdict %q (%s), want cpu: the child computed what the parent waited for\n%s", x.Verdict.Reason, x.Verdict.Summary, log)
		}
		if cpu, want := x.Critical.ByReason["cpu"], 0.8*min(x.WallS-0.1, compute); cpu < want {
			t.Errorf("cpu on the path %.2f s, want at least %.2f s\n%s", cpu, want, log)
		}
		if net := x.Critical.ByReason["network"]; net > 0.3 {
			t.Errorf("%.2f s network on the path: only the last 0.1 s waited on the server\n%s", net, log)
		}
		var into bool
		for _, l := range x.Critical.Chain {
			into = into || l.Reason == "ipc" && l.WorkerPID != x.Target.PID
		}
		if !into {
			t.Errorf("chain %+v: want the parent's wait on the pipe followed into the child\n%s", x.Critical.Chain, log)
		}
		checkRanked(t, x, log)
	})
}
