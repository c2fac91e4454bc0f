package scenarios

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/whyslow/whyslow/internal/slowdisk"
)

// nodeSaver is a Node.js server on one thread: GET /save appends 1 MiB to a
// file and fsyncs it synchronously, blocking the event loop; GET /fast
// answers at once, when the loop gets to it.
const nodeSaver = `
const http = require('http'), fs = require('fs');
const [port, file] = [Number(process.argv[2]), process.argv[3]];
const chunk = Buffer.alloc(1 << 20, 120);
http.createServer((req, res) => {
  if (req.url === '/save') {
    const fd = fs.openSync(file, 'a');
    fs.writeSync(fd, chunk);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
  res.end('ok\n');
}).listen(port, '127.0.0.1');
`

// startNodeSaver starts nodeSaver, appending to saved; it stops with the test.
func startNodeSaver(t *testing.T, saved string) (pid, port int) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		node, err = exec.LookPath("nodejs")
	}
	if err != nil {
		t.Fatal("node is needed (make deps installs nodejs)")
	}
	js := filepath.Join(t.TempDir(), "saver.js")
	os.WriteFile(js, []byte(nodeSaver), 0o644)
	port = freePort(t)
	srv := exec.Command(node, js, strconv.Itoa(port), saved)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitPort(t, port)
	return srv.Process.Pid, port
}

// queuedBehindSave sends GET /save, then three GET /fast while the loop is
// in its fsync, and returns the client's latencies of the three.
func queuedBehindSave(t *testing.T, base string) []time.Duration {
	t.Helper()
	dir := t.TempDir()
	var wg sync.WaitGroup
	fast := make([]time.Duration, 3)
	wg.Add(1)
	go func() { defer wg.Done(); curlTimed(t, base+"/save", filepath.Join(dir, "jar")) }()
	time.Sleep(60 * time.Millisecond) // the loop is in the fsync
	for i := range fast {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fast[i] = curlTimed(t, base+"/fast", filepath.Join(dir, "jar"+strconv.Itoa(i)))
		}()
	}
	wg.Wait()
	t.Logf("client: /fast took %v", fast)
	for _, f := range fast {
		if f < 100*time.Millisecond {
			t.Fatalf("a /fast request took %v: the loop was not blocked (client latencies %v)", f, fast)
		}
	}
	return fast
}

// checkQueued: the three /fast requests are found, each timed within
// 80-102% of a client's latency (they end together: the order need not
// match), and explained by the loop's fsync of the file /save wrote.
func checkQueued(t *testing.T, r *proxyRequests, fast []time.Duration) {
	t.Helper()
	var got []float64
	for _, q := range r.Requests {
		if q.Label != "GET /fast" {
			continue
		}
		got = append(got, q.DurationS)
		if q.Verdict.Reason != "sync" && q.Verdict.Reason != "disk-write" {
			t.Errorf("queued /fast %.3fs: verdict %s (%s), want the loop's fsync", q.DurationS, q.Verdict.Reason, q.Verdict.Summary)
		}
		var file bool
		for _, f := range q.Files {
			file = file || strings.HasSuffix(f.Path, "/saved.log")
		}
		if !file && !strings.Contains(q.Verdict.Summary, "saved.log") {
			t.Errorf("queued /fast: the file /save wrote is not named: %s %+v", q.Verdict.Summary, q.Files)
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d GET /fast requests found, want 3", len(got))
	}
	for _, s := range got {
		server := time.Duration(s * 1e9)
		var ok bool
		for _, f := range fast {
			ok = ok || server >= f*80/100 && server <= f*102/100
		}
		if !ok {
			t.Errorf("a /fast request took %v server-side, client latencies %v: want 80-102%% of one", server, fast)
		}
	}
}

// TestRequestsEventLoopQueued (issue 25): requests that arrive while an event
// loop is blocked in another request's fsync wait in the socket. Their
// latency runs from their arrival, and the fsync explains it.
func TestRequestsEventLoopQueued(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 4 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	pid, port := startNodeSaver(t, filepath.Join(d.Dir, "saved.log"))
	stop := recordRequests(t, "attach", "-p", strconv.Itoa(pid))
	fast := queuedBehindSave(t, fmt.Sprintf("http://127.0.0.1:%d", port))
	r, text, rec := stop()
	t.Logf("report requests:\n%s", text)
	matchClients(t, rec)
	checkQueued(t, r, fast)
	for _, q := range r.Requests {
		if q.Label == "GET /fast" && (!q.Approximate || q.QueuedS < 0.05) {
			t.Errorf("queued /fast: approximate %v, queued %.3fs: want both said", q.Approximate, q.QueuedS)
		}
	}
}

// TestRequestsProxyToEventLoop: the same loop behind nginx's proxy_pass,
// over TCP, recorded system-wide: each request counted once, at nginx, its
// upstream node named, and the loop's fsync still the reason.
func TestRequestsProxyToEventLoop(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 4 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	_, nodePort := startNodeSaver(t, filepath.Join(d.Dir, "saved.log"))
	dir, err := os.MkdirTemp("", "whyslow-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	_, port := startNginx(t, dir, fmt.Sprintf(`location / { proxy_pass http://127.0.0.1:%d; }`, nodePort))
	stop := recordRequests(t, "record")
	fast := queuedBehindSave(t, fmt.Sprintf("http://127.0.0.1:%d", port))
	r, text, rec := stop()
	t.Logf("report requests:\n%s", text)
	matchClients(t, rec)
	if r.Count != 4 {
		t.Errorf("%d requests, want the 4 sent: each once, at nginx", r.Count)
	}
	checkQueued(t, r, fast)
	for _, q := range r.Requests {
		if q.Comm != "nginx" || q.Upstream == nil || q.Upstream.Comm != "node" || q.Upstream.Peer != fmt.Sprintf("127.0.0.1:%d", nodePort) {
			t.Errorf("%s at %s: upstream %+v, want node on 127.0.0.1:%d", q.Label, q.Comm, q.Upstream, nodePort)
		}
	}
}

// goSaver is nodeSaver in Go's net/http: a goroutine per connection, on
// threads the runtime hands off when one blocks in fsync.
const goSaver = `package main

import (
	"net/http"
	"os"
)

func main() {
	chunk := make([]byte, 1<<20)
	http.HandleFunc("/save", func(w http.ResponseWriter, r *http.Request) {
		f, err := os.OpenFile(os.Args[2], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		f.Write(chunk)
		f.Sync()
		f.Close()
		w.Write([]byte("ok\n"))
	})
	http.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	http.ListenAndServe("127.0.0.1:"+os.Args[1], nil)
}
`

// TestRequestsGoServerNotQueued: Go's net/http serves /fast on another thread
// while /save's is in fsync. The requests' arrival must not make them look
// queued: fast server-side, as the client saw, and /save's verdict the fsync.
func TestRequestsGoServerNotQueued(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 4 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte(goSaver), 0o644)
	exe := filepath.Join(dir, "saver")
	build := exec.Command("go", "build", "-o", exe, src)
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go server: %v\n%s", err, out)
	}
	port := freePort(t)
	srv := exec.Command(exe, strconv.Itoa(port), filepath.Join(d.Dir, "saved.log"))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitPort(t, port)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	stop := recordRequests(t, "attach", "-p", strconv.Itoa(srv.Process.Pid))
	var wg sync.WaitGroup
	var save time.Duration
	fast := make([]time.Duration, 3)
	wg.Add(1)
	go func() { defer wg.Done(); save = curlTimed(t, base+"/save", filepath.Join(dir, "jar")) }()
	time.Sleep(60 * time.Millisecond)
	for i := range fast {
		fast[i] = curlTimed(t, base+"/fast", filepath.Join(dir, "jar"+strconv.Itoa(i)))
	}
	wg.Wait()
	r, text, rec := stop()
	t.Logf("client: /save %v, /fast %v\nreport requests:\n%s", save, fast, text)
	matchClients(t, rec)
	if save < 150*time.Millisecond {
		t.Fatalf("/save took %v: the fsync did not stall", save)
	}
	var n int
	for _, q := range r.Requests {
		switch q.Label {
		case "GET /fast":
			n++
			if q.DurationS > 0.05 || q.QueuedS > 0.01 {
				t.Errorf("/fast %.3fs server-side (queued %.3fs), client %v: it was never queued", q.DurationS, q.QueuedS, fast)
			}
		case "GET /save":
			if s := time.Duration(q.DurationS * 1e9); s < save*80/100 || s > save*102/100 || q.Verdict.Reason != "sync" {
				t.Errorf("/save %v server-side (client %v), verdict %s: want 80-102%% and sync", s, save, q.Verdict.Reason)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d GET /fast found, want 3", n)
	}
}
