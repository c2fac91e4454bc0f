package scenarios

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
)

// startRedis starts Debian's redis-server on a private port and data
// directory, with extra settings, and stops it at the end of the test.
func startRedis(t *testing.T, dir string, settings ...string) (port, pid int) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is needed (make deps installs it)")
	}
	port = freePort(t)
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
		"--daemonize", "no", "--logfile", ""}, settings...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitPort(t, port)
	return port, cmd.Process.Pid
}

// resp is a RESP client that measures each command itself.
type resp struct {
	c net.Conn
	r *bufio.Reader
}

func dialRedis(t *testing.T, port int) *resp {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &resp{c: c, r: bufio.NewReader(c)}
}

// do sends commands at once (a pipeline) and returns how long each one's
// reply took to come.
func (r *resp) do(t *testing.T, cmds ...[]string) []time.Duration {
	t.Helper()
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	start := time.Now()
	if _, err := r.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for range cmds {
		line, err := r.r.ReadString('\n')
		if err != nil || line[0] == '-' {
			t.Fatalf("redis: %v %q", err, line)
		}
		if line[0] == '$' { // a bulk reply: its bytes follow
			if n, _ := strconv.Atoi(strings.TrimSpace(line[1:])); n >= 0 {
				if _, err := r.r.Discard(n + 2); err != nil {
					t.Fatal(err)
				}
			}
		}
		took = append(took, time.Since(start))
	}
	return took
}

// TestRequestsRedisPipelined: every command is a request, pipelined ones
// too: redis-benchmark -P 16 and a pipeline of our own.
func TestRequestsRedisPipelined(t *testing.T) {
	requireRoot(t)
	port, pid := startRedis(t, t.TempDir())
	stop := recordServer(t, pid)
	if out, err := exec.Command("redis-benchmark", "-p", strconv.Itoa(port), "-c", "1", "-n", "160", "-P", "16", "-t", "set", "-q").CombinedOutput(); err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	c := dialRedis(t, port)
	took := c.do(t, []string{"SET", "k", "secret"}, []string{"GET", "k"}, []string{"INCR", "n"})
	took = append(took, c.do(t, []string{"GET", "k"})...)
	r, _ := stop()
	got := labelCounts(r)
	// redis-benchmark reads the server's settings first, with a CONFIG GET
	// or two (by its version).
	if n := got["redis CONFIG"]; n < 1 || n > 4 {
		t.Errorf("%d requests redis CONFIG, want redis-benchmark's 1 to 4", n)
	}
	checkLabels(t, r, map[string]int{"redis SET": 160 + 1, "redis GET": 2, "redis INCR": 1, "redis CONFIG": got["redis CONFIG"]})
	for i, label := range []string{"redis SET", "redis GET", "redis INCR"} {
		best := -1.0
		for _, q := range r.Requests {
			if q.Label == label && (best < 0 || q.DurationS < best) {
				best = q.DurationS
			}
		}
		if s := time.Duration(best * 1e9); best < 0 || s > took[i]+time.Millisecond {
			t.Errorf("pipelined %s: %v server-side, %v at the client", label, s, took[i])
		}
	}
}

// TestRequestsRedisAOF: with appendfsync always on a slow disk, each SET
// waits for the append-only file's fsync before its reply.
func TestRequestsRedisAOF(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 1 << 20, WriteIOPS: 40, Size: 256 << 20})
	port, pid := startRedis(t, d.Dir, "--appendonly", "yes", "--appendfsync", "always")
	c := dialRedis(t, port)
	c.do(t, []string{"SET", "warm", "1"})
	stop := recordServer(t, pid)
	var took []time.Duration
	for i := range 10 {
		took = append(took, c.do(t, []string{"SET", "k" + strconv.Itoa(i), strings.Repeat("v", 100)})...)
	}
	r, _ := stop()
	checkLabels(t, r, map[string]int{"redis SET": 10})
	var slowClient time.Duration
	for _, d := range took {
		slowClient = max(slowClient, d)
	}
	if slowClient < 5*time.Millisecond {
		t.Fatalf("the SETs took at most %v at the client: the disk is not slow", slowClient)
	}
	synced := 0
	for _, q := range r.Requests {
		if time.Duration(q.DurationS*1e9) > slowClient+time.Millisecond {
			t.Errorf("%s: %.4f s server-side, the slowest at the client %v", q.Label, q.DurationS, slowClient)
		}
		if q.Verdict.Reason == "sync" && strings.Contains(q.Verdict.Summary, "appendonly") {
			synced++
		} else {
			t.Logf("%s %.4f s: %s (%s)", q.Label, q.DurationS, q.Verdict.Reason, q.Verdict.Summary)
		}
	}
	if synced < 8 {
		t.Errorf("%d of 10 SETs' verdict is the append-only file's fsync, want 8 or more", synced)
	}
}
