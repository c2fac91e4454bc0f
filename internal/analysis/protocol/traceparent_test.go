package protocol

import "testing"

func TestTraceParent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct {
		name, first, want string
	}{
		{"header", "GET / HTTP/1.1\r\nHost: h\r\ntraceparent: " + tp + "\r\n\r\n", tp},
		{"name in any case", "POST /x HTTP/1.1\r\nTraceParent:" + tp + "\r\n", tp},
		{"cut off by the payload's end", "GET / HTTP/1.1\r\ntraceparent: " + tp[:40], ""},
		{"not yet ended line", "GET / HTTP/1.1\r\ntraceparent: " + tp, ""},
		{"in the body, after the headers", "GET / HTTP/1.1\r\n\r\ntraceparent: " + tp + "\r\n", ""},
		{"upper case hex", "GET / HTTP/1.1\r\ntraceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01\r\n", ""},
		{"zero trace id", "GET / HTTP/1.1\r\ntraceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n", ""},
		{"zero parent", "GET / HTTP/1.1\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01\r\n", ""},
		{"version ff", "GET / HTTP/1.1\r\ntraceparent: ff" + tp[2:] + "\r\n", ""},
		{"version 00 with more", "GET / HTTP/1.1\r\ntraceparent: " + tp + "-x\r\n", ""},
		{"a later version with more", "GET / HTTP/1.1\r\ntraceparent: 01" + tp[2:] + "-x\r\n", "01" + tp[2:] + "-x"},
		{"not HTTP", "*1\r\n$4\r\nPING\r\ntraceparent: " + tp + "\r\n", ""},
		{"none", "GET / HTTP/1.1\r\nHost: h\r\n\r\n", ""},
	} {
		if got := TraceParent([]byte(c.first)); got != c.want {
			t.Errorf("%s: TraceParent = %q, want %q", c.name, got, c.want)
		}
	}
}
