package protocol

import (
	"os"
	"testing"
)

// nginx-fastcgi.bin is what nginx 1.22 (Debian) sent its FastCGI server for
// `curl 'http://127.0.0.1:18091/index.php?user=secret'` with Debian's
// fastcgi.conf: BEGIN_REQUEST, PARAMS, the empty PARAMS and STDIN.
func TestFastCGILabel(t *testing.T) {
	req, err := os.ReadFile("testdata/nginx-fastcgi.bin")
	if err != nil {
		t.Fatal(err)
	}
	if p := Detect(req); p == nil || p.Name != "fastcgi" {
		t.Fatalf("Detect: %v, want fastcgi", p)
	}
	if got := Label(req, false); got != "GET /index.php" {
		t.Errorf("Label %q, want GET /index.php (the query's secret dropped)", got)
	}
	if got := Label(req, true); got != "GET /index.php?user=secret" {
		t.Errorf("Label kept query %q", got)
	}
	// What the kernel keeps of a first read may end anywhere: the method
	// and path come early, and a cut inside a pair is no label, not a wrong one.
	for n := 0; n < len(req); n++ {
		got := Label(req[:n], false)
		if got != "" && got != "GET /index.php" {
			t.Fatalf("the first %d bytes are labelled %q", n, got)
		}
	}
	if Label(req[:0xb0], false) != "GET /index.php" {
		t.Errorf("the first 176 bytes (through REQUEST_URI's path) are not labelled")
	}
}

// PHP-FPM reads a record's header and its content in reads of their own:
// the framer follows the records across them, and a request is whole at
// its PARAMS' end, however the bytes are cut.
func TestFastCGIFramer(t *testing.T) {
	req, err := os.ReadFile("testdata/nginx-fastcgi.bin")
	if err != nil {
		t.Fatal(err)
	}
	two := append(append([]byte{}, req...), req...) // a kept-alive connection's next request
	for _, cut := range []int{0, 1, 7, 8, 13, 100, 1000} {
		f := fastcgiProtocol.NewFramer()
		var got []Frame
		rest := two
		for _, n := range readSizes(two, cut) {
			got = append(got, f.Feed(rest[:n], n)...)
			rest = rest[n:]
		}
		if len(got) != 2 || got[0].Label != "GET /index.php" || got[1].Label != "GET /index.php" {
			t.Errorf("reads of %d: frames %+v, want two GET /index.php", cut, got)
		}
	}
	// A read past what the recording kept loses the records' thread: the
	// framer waits for a request's beginning, and labels none wrongly.
	f := fastcgiProtocol.NewFramer()
	if got := f.Feed(req[:20], len(req)-10); len(got) != 0 {
		t.Errorf("a request cut short gave %+v", got)
	}
	f.Feed(req[len(req)-10:], 10) // the rest, mid-record: skipped
	if got := f.Feed(req, len(req)); len(got) != 1 || got[0].Label != "GET /index.php" {
		t.Errorf("after a lost stretch: %+v, want the next request", got)
	}
}

// readSizes cuts b into reads: PHP-FPM's way (a record's header, then its
// content and padding) when cut is 0, else cut bytes each.
func readSizes(b []byte, cut int) []int {
	var out []int
	for len(b) > 0 {
		n := min(cut, len(b))
		if cut == 0 {
			n = min(fcgiHeaderLen, len(b))
			if n == fcgiHeaderLen {
				if body := int(b[4])<<8 | int(b[5]) + int(b[6]); body > 0 {
					out = append(out, n)
					b = b[n:]
					n = min(body, len(b))
				}
			}
		}
		out = append(out, n)
		b = b[n:]
	}
	return out
}
