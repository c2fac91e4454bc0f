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

// TestRequestsEventLoopQueued (issue 25): requests that arrive while an event
// loop is blocked in another request's fsync wait in the socket. Their
// latency runs from their arrival, and the fsync explains it.
func TestRequestsEventLoopQueued(t *testing.T) {
	d := newSlowDisk(t, slowdisk.Options{WriteBPS: 4 << 20, DirtyBytes: 256 << 20, DirtyBackground: 128 << 20})
	node, err := exec.LookPath("node")
	if err != nil {
		node, err = exec.LookPath("nodejs")
	}
	if err != nil {
		t.Fatal("node is needed (make deps installs nodejs)")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "saver.js"), []byte(nodeSaver), 0o644)
	port := freePort(t)
	saved := filepath.Join(d.Dir, "saved.log")
	srv := exec.Command(node, filepath.Join(dir, "saver.js"), strconv.Itoa(port), saved)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	waitPort(t, port)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	jar := filepath.Join(dir, "jar")

	stop := attachRequests(t, srv.Process.Pid)
	var wg sync.WaitGroup
	fast := make([]time.Duration, 3)
	wg.Add(1)
	go func() { defer wg.Done(); curlTimed(t, base+"/save", jar) }()
	time.Sleep(60 * time.Millisecond) // the loop is in the fsync
	for i := range fast {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fast[i] = curlTimed(t, base+"/fast", filepath.Join(dir, "jar"+strconv.Itoa(i)))
		}()
	}
	wg.Wait()
	r, rec := stop()
	t.Logf("client: /fast took %v", fast)
	if text, err := exec.Command(filepath.Join(bin, "whyslow"), "report", "requests", rec).CombinedOutput(); err == nil {
		t.Logf("report requests:\n%s", text)
	}
	for _, f := range fast {
		if f < 100*time.Millisecond {
			t.Fatalf("a /fast request took %v: the loop was not blocked (client latencies %v)", f, fast)
		}
	}
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
	// Each within 80-102% of some client's latency (they finish together:
	// the order of the three need not match).
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
