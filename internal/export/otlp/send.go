package otlp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ErrEndpoint is an endpoint URL whyslow cannot send to: a user's mistake.
var ErrEndpoint = errors.New("bad OTLP endpoint")

// Endpoint reads an OTLP/HTTP endpoint as OTEL_EXPORTER_OTLP_ENDPOINT is
// read: a base URL (http://collector:4318) gets the traces path /v1/traces;
// a URL already ending in /v1/traces is used as it is.
func Endpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("%w %q: want http://HOST:PORT or https://HOST:PORT (OTLP/HTTP, e.g. http://localhost:4318)", ErrEndpoint, raw)
	}
	if !strings.HasSuffix(u.Path, "/v1/traces") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// Sender posts traces to an OTLP/HTTP endpoint, as protobuf.
type Sender struct {
	URL     string // from Endpoint
	Headers map[string]string
	Client  *http.Client
	// Attempts is how many times a batch is sent when the endpoint is
	// unreachable or busy (429, 502, 503, 504); at least once.
	Attempts int
}

// Send posts d, in requests of at most maxSpans spans each, and returns how
// many spans the endpoint accepted. A span the endpoint rejects (OTLP's
// partial success) is an error: it is counted in its message.
func (s *Sender) Send(ctx context.Context, d *tracepb.TracesData, maxSpans int) (int, error) {
	return send(ctx, s.post, d, maxSpans)
}

// send delivers d in batches by post, which returns the spans rejected.
func send(ctx context.Context, post func(context.Context, []byte) (int64, error), d *tracepb.TracesData, maxSpans int) (int, error) {
	sent := 0
	for _, batch := range Split(d, maxSpans) {
		body, err := proto.Marshal(batch)
		if err != nil {
			return sent, fmt.Errorf("encoding traces: %w", err)
		}
		n := spansIn(batch)
		rejected, err := post(ctx, body)
		if err != nil {
			return sent, err
		}
		sent += n - int(rejected)
		if rejected > 0 {
			return sent, fmt.Errorf("the endpoint rejected %d of %d spans", rejected, n)
		}
	}
	return sent, nil
}

// Close lets the client's idle connections go.
func (s *Sender) Close() error {
	if s.Client != nil {
		s.Client.CloseIdleConnections()
	}
	return nil
}

func (s *Sender) post(ctx context.Context, body []byte) (rejected int64, err error) {
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	wait := time.Second
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrEndpoint, err)
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		for k, v := range s.Headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		retry := err != nil
		if err == nil {
			reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			switch {
			case resp.StatusCode/100 == 2:
				return partialSuccess(reply), nil
			case resp.StatusCode == 429 || resp.StatusCode == 502 || resp.StatusCode == 503 || resp.StatusCode == 504:
				retry = true
				if sec, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && sec > 0 {
					wait = min(time.Duration(sec)*time.Second, 30*time.Second)
				}
				err = fmt.Errorf("%s: %s", resp.Status, statusMessage(reply))
			default:
				return 0, fmt.Errorf("sending traces to %s: %s: %s", s.URL, resp.Status, statusMessage(reply))
			}
		}
		if !retry || attempt >= max(1, s.Attempts) {
			return 0, fmt.Errorf("sending traces to %s: %w", s.URL, err)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("sending traces to %s: %w", s.URL, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// Split cuts d into TracesData of at most maxSpans spans each, every one
// with d's resource and scope: a collector refuses requests past a size.
func Split(d *tracepb.TracesData, maxSpans int) []*tracepb.TracesData {
	if maxSpans <= 0 || spansIn(d) <= maxSpans {
		return []*tracepb.TracesData{d}
	}
	var out []*tracepb.TracesData
	for _, rs := range d.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for i := 0; i < len(ss.Spans); i += maxSpans {
				part := ss.Spans[i:min(len(ss.Spans), i+maxSpans)]
				out = append(out, &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
					Resource: rs.Resource, SchemaUrl: rs.SchemaUrl,
					ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl, Spans: part}}}}})
			}
		}
	}
	return out
}

func spansIn(d *tracepb.TracesData) int {
	n := 0
	for _, rs := range d.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n
}

// partialSuccess reads rejected_spans from an ExportTraceServiceResponse
// (field 1, partial_success; in it field 1, rejected_spans). The message is
// read field by field: its generated type lives in a package that brings
// gRPC and grpc-gateway with it.
func partialSuccess(reply []byte) int64 {
	ps := field(reply, 1, protowire.BytesType)
	if ps == nil {
		return 0
	}
	for b := ps; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(b)
			return int64(v)
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0
		}
		b = b[n:]
	}
	return 0
}

// statusMessage is the message of an error reply: a google.rpc.Status
// (field 2, message) in protobuf, or the body's first line.
func statusMessage(reply []byte) string {
	if m := field(reply, 2, protowire.BytesType); m != nil {
		return strings.ToValidUTF8(string(m), "?")
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(reply)), "\n")
	if len(line) > 200 {
		line = line[:200]
	}
	return strings.ToValidUTF8(line, "?")
}

// field is the value of the first field num of type typ in a message, nil
// when there is none or the bytes are not a message.
func field(msg []byte, num protowire.Number, typ protowire.Type) []byte {
	for len(msg) > 0 {
		n0, t0, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil
		}
		msg = msg[n:]
		if n0 == num && t0 == typ && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(msg)
			if n < 0 {
				return nil
			}
			return v
		}
		if n = protowire.ConsumeFieldValue(n0, t0, msg); n < 0 {
			return nil
		}
		msg = msg[n:]
	}
	return nil
}
