package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:4318":          "http://localhost:4318/v1/traces",
		"http://localhost:4318/":         "http://localhost:4318/v1/traces",
		"https://otlp.example/v1/traces": "https://otlp.example/v1/traces",
		"https://gw.example/tenant/a":    "https://gw.example/tenant/a/v1/traces",
		"localhost:4318":                 "",
		"grpc://localhost:4317":          "",
		"http://":                        "",
		"http://a b":                     "",
	} {
		got, err := Endpoint(in)
		if want == "" && err == nil || want != "" && got != want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func testData(n int) *tracepb.TracesData {
	tr := New(Recording{Host: "h"})
	b := &builder{t: tr, trace: tr.ids.trace("t"), seed: tr.ids.trace("t")}
	for i := 0; i < n; i++ {
		b.add(nil, "s", tracepb.Span_SPAN_KIND_INTERNAL, 1, 2, nil)
	}
	return tr.Data()
}

// TestSend: batches of at most maxSpans, protobuf, the headers given; a busy
// endpoint is tried again; rejected spans are an error that counts them.
func TestSend(t *testing.T) {
	var calls, spans atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var d tracepb.TracesData
		if r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("X-Tenant") != "a" || proto.Unmarshal(body, &d) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got := len(d.ResourceSpans[0].ScopeSpans[0].Spans)
		spans.Add(int32(got))
		if got > 3 {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	s := &Sender{URL: srv.URL + "/v1/traces", Headers: map[string]string{"X-Tenant": "a"}, Attempts: 2}
	sent, err := s.Send(context.Background(), testData(7), 3)
	if err != nil || sent != 7 || spans.Load() != 7 || calls.Load() != 4 {
		t.Errorf("sent %d (%v) in %d calls, the endpoint got %d spans; want 7 in 1 refused + 3 calls", sent, err, calls.Load(), spans.Load())
	}

	// Partial success: 2 rejected, with the endpoint's message.
	partial := protowire.AppendTag(nil, 1, protowire.VarintType)
	partial = protowire.AppendVarint(partial, 2)
	reply := protowire.AppendTag(nil, 1, protowire.BytesType)
	reply = protowire.AppendBytes(reply, partial)
	rej := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(reply) }))
	defer rej.Close()
	s = &Sender{URL: rej.URL}
	if sent, err := s.Send(context.Background(), testData(5), 0); err == nil || sent != 3 || !strings.Contains(err.Error(), "rejected 2 of 5") {
		t.Errorf("partial success: sent %d, %v; want 3 and an error counting 2 rejected", sent, err)
	}

	// A refusal says the endpoint's message (google.rpc.Status).
	status := protowire.AppendTag(nil, 2, protowire.BytesType)
	status = protowire.AppendString(status, "tenant unknown")
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write(status)
	}))
	defer bad.Close()
	s = &Sender{URL: bad.URL, Attempts: 3}
	if _, err := s.Send(context.Background(), testData(1), 0); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "tenant unknown") {
		t.Errorf("refused: %v", err)
	}
}
