package otlp

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// exportMethod is OTLP/gRPC's one call for traces.
const exportMethod = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// GRPCEndpoint reads an OTLP/gRPC endpoint: http://HOST:PORT in clear,
// https://HOST:PORT over TLS (OTEL_EXPORTER_OTLP_ENDPOINT's forms).
func GRPCEndpoint(raw string) (target string, secure bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return "", false, fmt.Errorf("%w %q: want http://HOST:PORT or https://HOST:PORT (OTLP/gRPC, e.g. http://localhost:4317)", ErrEndpoint, raw)
	}
	return u.Host, u.Scheme == "https", nil
}

// GRPCSender sends traces to an OTLP/gRPC endpoint. The request and reply
// go through as bytes: TracesData is, on the wire, the service's
// ExportTraceServiceRequest, and the reply is read as partialSuccess reads
// HTTP's; the generated service package would bring grpc-gateway along.
type GRPCSender struct {
	Target   string // from GRPCEndpoint
	Secure   bool
	Headers  map[string]string // sent as metadata
	Timeout  time.Duration     // of one call
	Attempts int               // as Sender's: for Unavailable and ResourceExhausted
	conn     *grpc.ClientConn
}

func (s *GRPCSender) Send(ctx context.Context, d *tracepb.TracesData, maxSpans int) (int, error) {
	if s.conn == nil {
		creds := insecure.NewCredentials()
		if s.Secure {
			creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
		}
		conn, err := grpc.NewClient(s.Target, grpc.WithTransportCredentials(creds))
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrEndpoint, err)
		}
		s.conn = conn
	}
	return send(ctx, s.post, d, maxSpans)
}

// Close ends the connection.
func (s *GRPCSender) Close() error {
	if s.conn == nil {
		return nil
	}
	return s.conn.Close()
}

func (s *GRPCSender) post(ctx context.Context, body []byte) (int64, error) {
	md := metadata.MD{}
	for k, v := range s.Headers {
		md.Set(strings.ToLower(k), v)
	}
	ctx = metadata.NewOutgoingContext(ctx, md)
	wait := time.Second
	for attempt := 1; ; attempt++ {
		call, cancel := ctx, context.CancelFunc(func() {})
		if s.Timeout > 0 {
			call, cancel = context.WithTimeout(ctx, s.Timeout)
		}
		var reply []byte
		err := s.conn.Invoke(call, exportMethod, &body, &reply, grpc.ForceCodec(rawCodec{}))
		cancel()
		if err == nil {
			return partialSuccess(reply), nil
		}
		st := status.Convert(err)
		retry := st.Code() == codes.Unavailable || st.Code() == codes.ResourceExhausted
		if !retry || attempt >= max(1, s.Attempts) {
			return 0, fmt.Errorf("sending traces to %s (gRPC): %s: %s", s.Target, st.Code(), st.Message())
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("sending traces to %s (gRPC): %w", s.Target, ctx.Err())
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// rawCodec passes messages through as bytes, marshalled or to be read by
// hand. Named proto: the content type the server expects.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }

func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }
