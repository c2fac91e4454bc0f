package otlp

import (
	"net"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/requests"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func i64(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func f64(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}

func boolean(k string, v bool) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}}
}

// requestAttrs are a server span's attributes in OpenTelemetry's semantic
// conventions: the request from its label (HTTP method and path; the
// database and its operation for Redis and PostgreSQL), the client's
// address, the process and thread that answered.
func requestAttrs(r *requests.Entry, host string) []*commonpb.KeyValue {
	a := []*commonpb.KeyValue{str("server.address", host),
		i64("process.pid", int64(r.PID)), str("process.executable.name", r.Comm),
		i64("thread.id", int64(r.TID)), str("thread.name", r.Comm),
		i64("whyslow.bytes_in", int64(r.BytesIn)), i64("whyslow.bytes_out", int64(r.BytesOut))}
	first, rest, _ := strings.Cut(r.Label, " ")
	switch {
	case first == "redis" || first == "postgres":
		system := map[string]string{"redis": "redis", "postgres": "postgresql"}[first]
		a = append(a, str("db.system.name", system), str("db.operation.name", rest))
	case strings.HasPrefix(rest, "/"):
		a = append(a, str("http.request.method", first), str("url.path", rest))
	}
	if r.Peer != "" {
		if h, p, err := net.SplitHostPort(r.Peer); err == nil {
			a = append(a, str("network.peer.address", h))
			if n, err := strconv.Atoi(p); err == nil {
				a = append(a, i64("network.peer.port", int64(n)))
			}
		} else {
			a = append(a, str("network.peer.address", r.Peer))
		}
	}
	return a
}
