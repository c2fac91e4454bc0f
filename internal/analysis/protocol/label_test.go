package protocol

import "testing"

func TestHTTPLabel(t *testing.T) {
	for in, want := range map[string]string{
		"GET /popularity/linux?x=1 HTTP/1.1\r\nHost: a\r\n": "GET /popularity/linux",
		"POST /board HTTP/1.0\r\n":                          "POST /board",
		"GET / HTTP/1.1":                                    "GET /",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03":      "", // TLS
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n":                    "", // Redis
		"get /lower HTTP/1.1\r\n":                           "",
		"GET /x SPDY/3\r\n":                                 "",
	} {
		if got := httpLabel([]byte(in), false); got != want {
			t.Errorf("httpLabel(%q) = %q, want %q", in, got, want)
		}
	}
	if got := httpLabel([]byte("GET /a?b=c HTTP/1.1\r\n"), true); got != "GET /a?b=c" {
		t.Errorf("keeping the query: %q", got)
	}
}

// TestRequestLabels: each protocol names the kind of request, never its
// values (keys, literals).
func TestRequestLabels(t *testing.T) {
	q := func(kind byte, body string) string {
		b := []byte{kind, 0, 0, 0, byte(4 + len(body))}
		return string(append(b, body...))
	}
	for in, want := range map[string]string{
		"GET /a?b=c HTTP/1.1\r\n":                      "GET /a",
		"*2\r\n$3\r\nget\r\n$6\r\nsecret\r\n":          "redis GET",
		"*1\r\n$4\r\nPING\r\n":                         "redis PING",
		"*1\r\n$99\r\nPING\r\n":                        "", // shorter than it says
		q('Q', "select * from t where pw = 'x'\x00"):   "postgres SELECT t",
		q('Q', "  BEGIN;\x00"):                         "postgres BEGIN",
		q('P', "s1\x00UPDATE t SET a = $1\x00"):        "postgres UPDATE t",
		q('Q', "1 + 1\x00"):                            "",
		"\x00\x00\x00\x08\x04\xd2\x16\x2f":             "", // SSLRequest
		"\x01\x01\x00\x01\x00\x08\x00\x00\x00\x01\x00": "", // FastCGI
	} {
		if got := Label([]byte(in), false); got != want {
			t.Errorf("Label(%q) = %q, want %q", in, got, want)
		}
	}
}
