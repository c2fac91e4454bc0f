package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/export/otlp"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/output"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// otlpExplained is how many of the slowest requests an OTLP export gives
// blame and its links: explaining one runs its own queries.
const otlpExplained = 1000

// otlpBatch is the most spans one OTLP request carries: collectors refuse
// bodies past a few MiB.
const otlpBatch = 2000

type otlpFlags struct {
	endpoint string
	protocol string
	headers  []string
	min      time.Duration
	label    string
	pid      uint
	path     bool
	timeout  time.Duration
}

func newExportOTLP() *cobra.Command {
	var o otlpFlags
	cmd := &cobra.Command{
		Use:   "otlp FILE --endpoint URL",
		Short: "Each request as an OpenTelemetry trace whose spans say why, sent over OTLP",
		Long: `Sends the recording's requests (record --requests) to an OpenTelemetry endpoint
(a Collector, Jaeger, Tempo) over OTLP/HTTP (protobuf) or OTLP/gRPC: one trace per
request, a server span with the semantic conventions' attributes, and under
it the request's critical path: queued, cpu, disk-write on FILE, lock held by
a process, network wait on PEER, the hop into its upstream with the
upstream's own spans. whyslow.* attributes give each span's reason and
share, and the blame; spans link to the blamed processes. A request whose
first bytes carry a W3C traceparent joins that trace. Each span goes under
the service of the process that spent it (OTEL_SERVICE_NAME from its
environment, else its systemd service, else its executable's name), so a
trace crosses services as the request did. A recording without requests
(or with --critical-path) sends its target's critical path as one trace.

Times are wall-clock times, converted from the recording's clock with the
offset taken when it began. Details: docs/otlp.md.`,
		Example: `  whyslow export otlp rec.db --endpoint http://localhost:4318
  whyslow export otlp rec.db --endpoint http://localhost:4317 --protocol grpc
  whyslow export otlp rec.db --endpoint https://otlp.example.com --header "Authorization=Bearer $TOKEN" --min 100ms`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exportOTLP(cmd, args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.endpoint, "endpoint", "", "the OTLP endpoint: http/protobuf, a base URL (http://localhost:4318; /v1/traces is added) or the traces URL; grpc, http://HOST:4317 or https://")
	f.StringVar(&o.protocol, "protocol", "http/protobuf", "OTLP's transport: http/protobuf or grpc")
	f.StringArrayVar(&o.headers, "header", nil, "a header (gRPC: metadata) to send, NAME=VALUE (repeatable): an API key, a tenant")
	f.DurationVar(&o.min, "min", 0, "only requests at least this slow")
	f.StringVar(&o.label, "label", "", "only requests whose label matches this glob ('GET /api/*')")
	f.BoolVar(&o.path, "critical-path", false, "send the critical path of the target (or --pid), not the requests")
	f.UintVar(&o.pid, "pid", 0, "the process whose critical path to send, without requests or with --critical-path (default: the recording's target)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "how long one request to the endpoint may take")
	return cmd
}

// otlpSend is a transport's sender: otlp.Sender or otlp.GRPCSender.
type otlpSend interface {
	Send(context.Context, *tracepb.TracesData, int) (int, error)
	Close() error
}

// otlpSender reads --protocol and --endpoint: the sender, and the URL said.
func otlpSender(o otlpFlags, headers map[string]string) (otlpSend, string, error) {
	switch o.protocol {
	case "http/protobuf", "http":
		url, err := otlp.Endpoint(o.endpoint)
		if err != nil {
			return nil, "", withCode(ExitUsage, err)
		}
		return &otlp.Sender{URL: url, Headers: headers, Attempts: 3, Client: &http.Client{Timeout: o.timeout}}, url, nil
	case "grpc":
		target, secure, err := otlp.GRPCEndpoint(o.endpoint)
		if err != nil {
			return nil, "", withCode(ExitUsage, err)
		}
		return &otlp.GRPCSender{Target: target, Secure: secure, Headers: headers, Timeout: o.timeout, Attempts: 3}, o.endpoint + " (gRPC)", nil
	}
	return nil, "", usageErr("--protocol %q: http/protobuf or grpc", o.protocol)
}

func exportOTLP(cmd *cobra.Command, rec string, o otlpFlags) error {
	if o.endpoint == "" {
		return usageErr("export otlp needs --endpoint URL (e.g. http://localhost:4318)")
	}
	headers := map[string]string{}
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" || strings.ContainsAny(h, "\r\n") {
			return usageErr("--header %q: want NAME=VALUE", h)
		}
		headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if o.min < 0 || o.timeout <= 0 {
		return usageErr("--min must be at least 0 and --timeout more than 0")
	}
	sender, url, err := otlpSender(o, headers)
	if err != nil {
		return err
	}
	defer sender.Close()
	src, done, err := openSource(rec)
	if err != nil {
		return err
	}
	defer done()
	traces := otlp.New(otlp.RecordingOf(src, Version))
	what, err := addOTLPTraces(traces, src, o)
	if err != nil {
		return err
	}
	if traces.Spans() == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "no request to send: none passes --min and --label")
		return nil
	}
	services, err := otlp.ServicesOf(src, traces.PIDs())
	if err != nil {
		return err
	}
	traces.SetServices(services)
	sent, err := sender.Send(context.Background(), traces.Data(), otlpBatch)
	if err != nil && sent > 0 {
		return fmt.Errorf("%w (%d spans were sent before)", err, sent)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "sent %d %s, %d spans, to %s\n", traces.Count(), what, sent, format.Safe(url))
	return nil
}

// addOTLPTraces adds the recording's requests, or its target's critical
// path when it has none, and says which.
func addOTLPTraces(traces *otlp.Traces, src *explain.Source, o otlpFlags) (string, error) {
	if !o.path {
		f := source.NoFilter()
		f.Limit, f.Min = 0, o.min
		r, err := requests.Find(src, requests.Options{Filter: f, LabelGlob: o.label, Explained: otlpExplained})
		if err != nil && !errors.Is(err, requests.ErrNoSocketCalls) {
			return "", err
		}
		// Filters that leave no request send none, not the whole target.
		if err == nil && (r.Count > 0 || o.min > 0 || o.label != "") {
			output.FillRequestSummaries(r)
			for i := range r.Requests {
				traces.AddRequest(&r.Requests[i])
			}
			return "request traces", nil
		}
	}
	pid := uint32(o.pid)
	if pid == 0 {
		p, _ := strconv.Atoi(src.Meta["target_pid"])
		if p <= 0 {
			return "", usageErr("this recording has no requests and no target process: give --pid")
		}
		pid = uint32(p)
	} else if err := holdsProcess(src, pid); err != nil {
		return "", err
	}
	x, err := explain.Explain(src, pid)
	if err != nil {
		return "", err
	}
	output.FillSummaries(x)
	traces.AddPath(x)
	return "critical path trace", nil
}
