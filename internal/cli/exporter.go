package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/exporter"
	"github.com/whyslow/whyslow/internal/live"
)

type exporterOptions struct {
	listen  string
	groupBy string
	groups  int
	devices int
	every   time.Duration
}

func newExporter() *cobra.Command {
	var o exporterOptions
	cmd := &cobra.Command{
		Use:   "exporter [--listen 127.0.0.1:9477]",
		Short: "Serve Prometheus metrics: wait time by reason per process group, block I/O, dirty throttling, writeback",
		Long: `Captures system-wide at the default level and serves the totals on /metrics:
off-CPU seconds by reason and CPU seconds per process group (cgroup, or
command name), block requests, bytes and latency histograms per device,
dirty-throttle seconds, bytes dirtied and written back per group that dirtied
them, lost events and the capture's health (docs/metrics.md).

Label sets are bounded: the --groups busiest groups and --devices busiest
devices get their own label value, the rest are summed under "other".
It listens on loopback unless --listen says otherwise.`,
		Example: `  whyslow exporter
  whyslow exporter --listen :9477 --group-by comm --groups 30`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.groupBy != string(exporter.ByCgroup) && o.groupBy != string(exporter.ByComm) {
				return usageErr("--group-by must be cgroup or comm, got %q", o.groupBy)
			}
			if o.groups < 1 || o.groups > 1000 || o.devices < 1 || o.devices > 1000 {
				return usageErr("--groups and --devices must be from 1 to 1000")
			}
			if o.every < 100*time.Millisecond {
				return usageErr("--interval must be at least 100ms, got %s", o.every)
			}
			return runExporter(o)
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:9477", "address to serve /metrics on (port 0: any free port)")
	cmd.Flags().StringVar(&o.groupBy, "group-by", "cgroup", "what a process group is: cgroup or comm")
	cmd.Flags().IntVar(&o.groups, "groups", 20, "process groups with a label value of their own (the rest: other)")
	cmd.Flags().IntVar(&o.devices, "devices", 16, "devices with a label value of their own (the rest: other)")
	cmd.Flags().DurationVar(&o.every, "interval", time.Second, "how often the capture is added into the metrics")
	return cmd
}

func runExporter(o exporterOptions) error {
	if o.listen == "" {
		return usageErr("--listen needs an address (host:port; 127.0.0.1:9477 by default)")
	}
	if err := needPrivileges(); err != nil {
		return err
	}
	col := exporter.New(exporter.Options{GroupBy: exporter.GroupBy(o.groupBy), Groups: o.groups,
		Devices: o.devices, Every: o.every})
	srv, ln, err := metricsServer(o.listen, col)
	if err != nil {
		return err
	}
	defer ln.Close()

	ctx, stop := interruptible()
	defer stop()
	serveErr := make(chan error, 1)
	sampler := live.Sampler{Every: o.every}
	runErr := sampler.Run(ctx, func(info live.Info) {
		col.SetInfo(info)
		go func() { serveErr <- srv.Serve(ln) }()
		fmt.Fprintf(os.Stderr, "whyslow exporter: serving http://%s/metrics\n", ln.Addr())
	}, func(f *live.Frame) {
		col.Add(f)
		select {
		case err := <-serveErr:
			serveErr <- err
			stop() // the server failed: stop capturing too
		default:
		}
	})
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutCtx)
	select {
	case err := <-serveErr:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving metrics: %w", err)
		}
	default:
	}
	return runErr
}

// metricsServer listens on listen and serves /metrics with the collectors,
// Go's and the process's own; the caller starts it (Serve) once capture runs.
func metricsServer(listen string, cols ...prometheus.Collector) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, nil, withCode(ExitUsage, fmt.Errorf("listening on %s: %w", listen, err))
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		// The metrics name processes and files: say it when anyone may read them.
		fmt.Fprintf(os.Stderr, "whyslow: serving /metrics on %s, beyond this machine (process and file names included)\n", a)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "whyslow"}))
	reg.MustRegister(cols...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><body><a href="/metrics">whyslow metrics</a></body></html>`)
	})
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln, nil
}
