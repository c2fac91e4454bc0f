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
// conventions: the request by its protocol (the cut's, never parsed back
// from its label): HTTP's (FastCGI's too: a web server's request) method
// and path, a database's system and operation; the client's address (the
// connection's peer: whyslow sees no proxy's forwarding headers, so
// client.* and network.peer.* are the same), the server's port, the process
// and thread that answered.
func requestAttrs(r *requests.Entry, host string) []*commonpb.KeyValue {
	a := []*commonpb.KeyValue{str("server.address", host),
		i64("process.pid", int64(r.PID)), str("process.executable.name", r.Comm),
		i64("thread.id", int64(r.TID)), str("thread.name", r.Comm),
		i64("whyslow.bytes_in", int64(r.BytesIn)), i64("whyslow.bytes_out", int64(r.BytesOut))}
	a = append(a, protocolAttrs(r.Protocol, r.Label)...)
	if _, port := address(r.Local); port != 0 {
		a = append(a, i64("server.port", port))
	}
	if h, port := address(r.Peer); h != "" {
		a = append(a, str("client.address", h), str("network.peer.address", h))
		if port != 0 {
			a = append(a, i64("client.port", port), i64("network.peer.port", port))
		}
	}
	return a
}

// address splits a socket's address, ip:port or a unix socket's path, into
// the semantic conventions' address and port (0: none).
func address(addr string) (string, int64) {
	if h, p, err := net.SplitHostPort(addr); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return h, int64(n)
		}
	}
	return addr, 0
}

// serverAddrs are a client span's server.address and server.port: the
// upstream's address.
func serverAddrs(addr string) []*commonpb.KeyValue {
	h, port := address(addr)
	a := []*commonpb.KeyValue{str("server.address", h)}
	if port != 0 {
		a = append(a, i64("server.port", port))
	}
	return a
}

// dbSystems are the semantic conventions' db.system.name of the databases
// whyslow frames (a MariaDB server speaks MySQL's protocol: its requests
// cannot tell it from MySQL, so both are mysql).
var dbSystems = map[string]string{"postgres": "postgresql", "mysql": "mysql", "redis": "redis"}

// protocolAttrs are a request's attributes by its protocol, from its label
// ("GET /path"; "postgres SELECT users", "redis GET"): which parts mean
// what is the protocol's, not the label's look.
func protocolAttrs(protocol, label string) []*commonpb.KeyValue {
	switch protocol {
	case "http", "fastcgi":
		method, path, ok := strings.Cut(label, " ")
		if !ok || !strings.HasPrefix(path, "/") {
			return nil
		}
		return []*commonpb.KeyValue{str("http.request.method", method), str("url.path", path)}
	case "postgres", "mysql", "redis":
		a := []*commonpb.KeyValue{str("db.system.name", dbSystems[protocol])}
		// The label leads with the protocol's own name, then what it did.
		rest := strings.TrimPrefix(strings.TrimPrefix(label, protocol), " ")
		if op, target, _ := strings.Cut(rest, " "); op != "" {
			a = append(a, str("db.operation.name", op))
			if protocol != "redis" && target != "" {
				a = append(a, str("db.collection.name", target), str("db.query.summary", rest))
			}
		}
		return a
	}
	return nil
}
