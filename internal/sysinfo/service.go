package sysinfo

import (
	"net/url"
	"strings"

	"github.com/prometheus/procfs"
)

// ServiceName is the OpenTelemetry service name a process gives itself in
// its environment, as an OpenTelemetry SDK would read it: OTEL_SERVICE_NAME,
// else service.name in OTEL_RESOURCE_ATTRIBUTES; "" when neither is set or
// the environment cannot be read (the process is gone, or not ours to read).
func (fs FS) ServiceName(pid uint32) string {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return ""
	}
	p, err := pfs.Proc(int(pid))
	if err != nil {
		return ""
	}
	env, err := p.Environ()
	if err != nil {
		return ""
	}
	return serviceNameOf(env)
}

// serviceNameOf reads the service name from environment entries (NAME=VALUE).
func serviceNameOf(env []string) string {
	var attrs string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "OTEL_SERVICE_NAME":
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		case "OTEL_RESOURCE_ATTRIBUTES":
			attrs = v
		}
	}
	// key1=value1,key2=value2, values percent-encoded (the SDKs' spec).
	for _, pair := range strings.Split(attrs, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(k) != "service.name" {
			continue
		}
		if u, err := url.PathUnescape(strings.TrimSpace(v)); err == nil && u != "" {
			return u
		}
	}
	return ""
}
