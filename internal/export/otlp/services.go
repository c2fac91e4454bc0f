package otlp

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/event"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Service is a process as a tracing backend lists it: the resource of the
// spans it spent (docs/otlp.md, "Services"). Jaeger's service list, Tempo's
// search and an APM then show nginx, php-fpm8.2 or postgres, not whyslow,
// which stays the instrumentation scope.
type Service struct {
	Name string
	// Source says where Name came from: "environment" (OTEL_SERVICE_NAME,
	// or service.name in OTEL_RESOURCE_ATTRIBUTES, as the process's own
	// OpenTelemetry SDK would name it), "unit" (its systemd service) or
	// "executable" (the file it runs, else its name).
	Source     string
	Executable string
	Container  string // container.id: the full id its cgroup path gives
	Pod        string // k8s.pod.uid
}

// process is what a recording holds of one process's identity.
type process struct {
	service, cgroup, exe, comm string
	known                      bool // seen exec or there at attach: its own facts
}

// ServicesOf reads from a recording the service of each process in pids.
// A process forked without an exec is its parent's: it has its
// environment, its cgroup and its executable.
func ServicesOf(src *explain.Source, pids []uint32) (map[uint32]Service, error) {
	src, done, err := src.Hold()
	if err != nil {
		return nil, err
	}
	defer done()
	procs := map[uint32]*process{}
	of := func(pid uint32) *process {
		if procs[pid] == nil {
			procs[pid] = &process{}
		}
		return procs[pid]
	}
	// Oldest first: a later exec is what the process became.
	rows, err := src.Query(`SELECT pid, service, cgroup, filename, comm FROM (
	    SELECT ts, pid, service, cgroup, filename, comm FROM execs
	    UNION ALL SELECT ts, pid, service, cgroup, '' AS filename, comm FROM existing WHERE tid = pid)
	  ORDER BY ts`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var pid uint32
		var service, cgroup, filename, comm string
		if err := rows.Scan(&pid, &service, &cgroup, &filename, &comm); err != nil {
			rows.Close()
			return nil, err
		}
		p := of(pid)
		p.service, p.cgroup, p.known = service, cgroup, true
		p.exe = comm
		if filename != "" {
			p.exe = filepath.Base(filename)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	parent := map[uint32]uint32{}
	rows, err = src.Query(`SELECT pid, child_pid FROM forks WHERE child_pid <> pid`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var pid, child uint32
		if err := rows.Scan(&pid, &child); err != nil {
			rows.Close()
			return nil, err
		}
		parent[child] = pid
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := namesOf(src, pids, of); err != nil {
		return nil, err
	}
	out := make(map[uint32]Service, len(pids))
	for _, pid := range pids {
		p := of(pid)
		// the nearest of its forebears whose exec (or attach) was seen
		for at, hops := pid, 0; !p.known && hops < 64; hops++ {
			up, ok := parent[at]
			if !ok {
				break
			}
			if q := procs[up]; q != nil && q.known {
				p = &process{service: q.service, cgroup: q.cgroup, exe: q.exe, comm: procs[pid].comm, known: true}
			}
			at = up
		}
		if p.exe == "" {
			p.exe = procs[pid].comm
		}
		out[pid] = serviceOf(p)
	}
	return out, nil
}

// namesOf notes each process's name, for those the recording saw no exec of.
func namesOf(src *explain.Source, pids []uint32, of func(uint32) *process) error {
	if len(pids) == 0 {
		return nil
	}
	list := make([]string, len(pids))
	for i, pid := range pids {
		list[i] = fmt.Sprint(pid)
	}
	rows, err := src.Query(`SELECT pid, comm FROM processes WHERE pid IN (` + strings.Join(list, ",") + `)`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var pid uint32
		var comm string
		if err := rows.Scan(&pid, &comm); err != nil {
			return err
		}
		of(pid).comm = comm
	}
	return rows.Err()
}

// serviceOf names a process's service: the name it gave itself, else its
// systemd service's, else its executable's.
func serviceOf(p *process) Service {
	container, pod, unit := event.CgroupIdentity(p.cgroup)
	s := Service{Executable: p.exe, Container: container, Pod: pod}
	switch {
	case p.service != "":
		s.Name, s.Source = p.service, "environment"
	case unit != "":
		s.Name, s.Source = strings.TrimSuffix(unit, ".service"), "unit"
	case p.exe != "":
		s.Name, s.Source = p.exe, "executable"
	default:
		s.Name, s.Source = "unknown", "executable"
	}
	return s
}

// PIDs are the processes the export's spans were spent by.
func (t *Traces) PIDs() []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for _, s := range append(slices.Clip(t.spans), t.blamedSpans()...) {
		if pid, ok := spanPID(s); ok && !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// SetServices gives the export each process's service (ServicesOf): its
// spans go under that service's resource. Without, every span is
// whyslow's.
func (t *Traces) SetServices(s map[uint32]Service) { t.services = s }

// spanPID is the process.pid a span says it was spent by.
func spanPID(s *tracepb.Span) (uint32, bool) {
	for _, a := range s.Attributes {
		if a.Key == "process.pid" {
			return uint32(a.Value.GetIntValue()), true
		}
	}
	return 0, false
}

// SchemaURL is the semantic conventions' version that the attribute names
// follow (docs/otlp.md, "Attributes"): the newest release before the OTLP
// protos whyslow links; every name whyslow sends is in its registry, none
// deprecated. OpenTelemetry's protos pin no version of their own.
const SchemaURL = "https://opentelemetry.io/schemas/1.44.0"

// byProcess sorts spans into one ResourceSpans per process: a span's is
// its own process.pid, else its parent span's (a request's queued span is
// its server's). Spans of no process, and all of them when no service is
// known, are whyslow's own.
func (t *Traces) byProcess(spans []*tracepb.Span) []*tracepb.ResourceSpans {
	scope := &commonpb.InstrumentationScope{Name: "github.com/whyslow/whyslow", Version: t.rec.Version}
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[string(s.SpanId)] = s
	}
	pidOf := func(s *tracepb.Span) uint32 {
		for hops := 0; s != nil && hops < 64; hops++ {
			if pid, ok := spanPID(s); ok {
				return pid
			}
			s = byID[string(s.ParentSpanId)]
		}
		return 0
	}
	groups := map[uint32]*tracepb.ScopeSpans{}
	var order []uint32
	for _, s := range spans {
		pid := pidOf(s)
		if _, known := t.services[pid]; !known {
			pid = 0
		}
		g := groups[pid]
		if g == nil {
			g = &tracepb.ScopeSpans{Scope: scope, SchemaUrl: SchemaURL}
			groups[pid] = g
			order = append(order, pid)
		}
		g.Spans = append(g.Spans, s)
	}
	out := make([]*tracepb.ResourceSpans, 0, len(order))
	for _, pid := range order {
		out = append(out, &tracepb.ResourceSpans{Resource: t.resource(pid), SchemaUrl: SchemaURL, ScopeSpans: []*tracepb.ScopeSpans{groups[pid]}})
	}
	return out
}

// resource is process pid's resource, in OpenTelemetry's semantic
// conventions; pid 0 is whyslow's own.
func (t *Traces) resource(pid uint32) *resourcepb.Resource {
	a := []*commonpb.KeyValue{str("host.name", t.rec.Host), str("os.type", "linux")}
	s, ok := t.services[pid]
	if pid == 0 || !ok {
		return &resourcepb.Resource{Attributes: append([]*commonpb.KeyValue{
			str("service.name", "whyslow"), str("service.version", t.rec.Version)}, a...)}
	}
	a = append([]*commonpb.KeyValue{str("service.name", s.Name),
		str("service.instance.id", fmt.Sprintf("%s/%d", t.rec.Host, pid)),
		i64("process.pid", int64(pid)), str("process.executable.name", s.Executable),
		str("whyslow.service.source", s.Source)}, a...)
	if s.Container != "" {
		a = append(a, str("container.id", s.Container))
	}
	if s.Pod != "" {
		a = append(a, str("k8s.pod.uid", s.Pod))
	}
	return &resourcepb.Resource{Attributes: a}
}
