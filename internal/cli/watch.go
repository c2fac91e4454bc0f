package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/export/otlp"
	"github.com/whyslow/whyslow/internal/exporter"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/live"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/watch"
)

type watchOptions struct {
	requests    bool
	noPayload   bool
	dir         string
	window      time.Duration
	after       time.Duration
	cooldown    time.Duration
	keep        int
	maxDisk     string
	memory      string
	slowRequest time.Duration
	stall       time.Duration
	psi         []string
	listen      string
	snapshot    bool
	ring        string
	writer      bool // the incident writer child (internal)
	otlp        string
	otlpProto   string
}

func newWatch() *cobra.Command {
	var o watchOptions
	cmd := &cobra.Command{
		Use:   "watch [--requests] [--dir DIR] [triggers]",
		Short: "Leave whyslow running: keep the last moments in memory, write and explain an incident when something is slow",
		Long: `A flight recorder. Captures system-wide at the default level (with
--requests, every socket call too) and keeps the last --window of events in
memory, within --memory; what the budget drops is counted in the incident.
When a trigger fires, it waits --after (and, while the slow request is
unanswered or the thread still stalled, up to 30 s more), then writes an
incident in --dir:

  <time>-<trigger>.db     the window as a recording (every 'report' reads it)
  <time>-<trigger>.txt    the explanation: the slow request or process first
  <time>-<trigger>.json   'report explain --json' of that process
  <time>-<trigger>.requests.json   'report requests --json' (slow requests)
  <time>-<trigger>.html   the HTML report

and says it in one line on stderr: time, trigger, verdict, culprit. Other
triggers within --cooldown are counted with it; --keep and --max-disk remove
the oldest incidents. Triggers:

  --slow-request DUR   a request unanswered this long (needs --requests)
  --stall DUR          a thread in one uninterruptible wait, a sync or dirty
                       throttling this long (2s by default; 0: off)
  --psi RULE           pressure, e.g. io:full>20%/5s (io, cpu, memory;
                       some or full; share of the duration), repeatable
  SIGUSR1, or 'whyslow watch --snapshot --dir DIR' from another shell

With --listen, the exporter's metrics are served too, with
whyslow_incidents_total{trigger} and whyslow_last_incident_timestamp_seconds
(docs/watch.md). With --otlp URL, each incident is sent, once explained, to an
OpenTelemetry endpoint as traces, over OTLP/HTTP or, with --otlp-protocol
grpc, OTLP/gRPC (its slow requests, or its process's
critical path); up to 8 wait while the endpoint is down, and those dropped
are counted and said (docs/otlp.md).`,
		Example: `  whyslow watch --requests --slow-request 1s --dir /var/lib/whyslow/incidents
  whyslow watch --psi 'io:full>20%/5s' --listen 127.0.0.1:9477
  whyslow watch --snapshot --dir /var/lib/whyslow/incidents`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.writer {
				return writeIncident()
			}
			if o.snapshot {
				return askSnapshot(o.dir)
			}
			return runWatch(cmd, o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.requests, "requests", false, "capture every socket call too, so that requests are followed (and --slow-request works)")
	f.BoolVar(&o.noPayload, "no-payload", false, "with --requests: do not take the first bytes of each request (its label)")
	f.StringVar(&o.dir, "dir", "/var/lib/whyslow/incidents", "where incidents are written (created, mode 0700)")
	f.DurationVar(&o.window, "window", 30*time.Second, "how much is kept before a trigger")
	f.DurationVar(&o.after, "after", 2*time.Second, "how long after a trigger the incident is written")
	f.DurationVar(&o.cooldown, "cooldown", time.Minute, "after an incident, other triggers only count for this long")
	f.IntVar(&o.keep, "keep", 20, "incidents kept (the oldest go; 0: no limit)")
	f.StringVar(&o.maxDisk, "max-disk", "1G", "disk the incidents may take (the oldest go; 0: no limit)")
	f.StringVar(&o.memory, "memory", "32M", "memory the kept events may take (the process takes about this and 100 MiB: docs/watch.md)")
	f.DurationVar(&o.slowRequest, "slow-request", 0, "trigger: a request slower than this (needs --requests)")
	f.DurationVar(&o.stall, "stall", 2*time.Second, "trigger: a thread stalled this long in one uninterruptible wait, a sync or dirty throttling (0: off)")
	f.StringArrayVar(&o.psi, "psi", nil, "trigger: pressure above a share, RESOURCE:some|full>SHARE%/DURATION (repeatable)")
	f.StringVar(&o.listen, "listen", "", "also serve Prometheus metrics here (host:port)")
	f.StringVar(&o.otlp, "otlp", "", "also send each incident, once explained, to this OTLP endpoint as traces (docs/otlp.md)")
	f.StringVar(&o.otlpProto, "otlp-protocol", "http/protobuf", "the --otlp endpoint's protocol: http/protobuf (a URL, :4318) or grpc (host:port, :4317)")
	f.BoolVar(&o.snapshot, "snapshot", false, "ask the watch writing to --dir for an incident now, and return")
	f.StringVar(&o.ring, "ring-size", "", "ring buffer for events (a power of two, 4K to 1G; default 4M)")
	f.BoolVar(&o.writer, "write-recording", false, "internal: write an incident's recording handed over on stdin")
	f.MarkHidden("write-recording")
	return cmd
}

func (o watchOptions) config() (watch.Options, error) {
	var w watch.Options
	switch {
	case o.window < time.Second || o.window > time.Hour:
		return w, usageErr("--window must be from 1s to 1h, got %v", o.window)
	case o.after < 0 || o.after > time.Minute:
		return w, usageErr("--after must be from 0 to 1m, got %v", o.after)
	case o.cooldown < 0:
		return w, usageErr("--cooldown must not be negative, got %v", o.cooldown)
	case o.keep < 0:
		return w, usageErr("--keep must not be negative")
	case o.slowRequest < 0 || o.stall < 0:
		return w, usageErr("--slow-request and --stall are durations of at least 0")
	case o.slowRequest > 0 && !o.requests:
		return w, usageErr("--slow-request needs --requests: requests are followed only when socket calls are captured")
	case o.dir == "":
		return w, usageErr("--dir needs a directory")
	}
	switch {
	case o.otlp == "":
	case o.otlpProto == "grpc":
		if _, _, err := otlp.GRPCEndpoint(o.otlp); err != nil {
			return w, withCode(ExitUsage, err)
		}
		w.OTLP, w.OTLPProtocol = o.otlp, "grpc"
	case o.otlpProto == "http/protobuf" || o.otlpProto == "http":
		url, err := otlp.Endpoint(o.otlp)
		if err != nil {
			return w, withCode(ExitUsage, err)
		}
		w.OTLP = url
	default:
		return w, usageErr("--otlp-protocol %q: http/protobuf or grpc", o.otlpProto)
	}
	maxDisk, err := parseSize(o.maxDisk)
	if err != nil || maxDisk < 0 {
		return w, usageErr("--max-disk: %q is not a size", o.maxDisk)
	}
	memory, err := parseSize(o.memory)
	if err != nil || memory < 1<<20 || memory > 16<<30 {
		return w, usageErr("--memory must be a size from 1M to 16G, got %q", o.memory)
	}
	for _, r := range o.psi {
		rule, err := watch.ParsePSIRule(r)
		if err != nil {
			return w, withCode(ExitUsage, err)
		}
		w.PSI = append(w.PSI, rule)
	}
	cf := captureFlags{requests: o.requests, noPayload: o.noPayload, slow: time.Millisecond, ring: o.ring}
	copts, err := cf.options()
	if err != nil {
		return w, err
	}
	exe, err := os.Executable()
	if err != nil {
		return w, fmt.Errorf("finding whyslow's own binary, which explains incidents: %w", err)
	}
	w = watch.Options{Capture: copts, Dir: o.dir, Window: o.window, After: o.after, Cooldown: o.cooldown,
		Keep: o.keep, MaxDisk: int64(maxDisk), Memory: int64(memory), SlowRequest: o.slowRequest, Stall: o.stall,
		PSI: w.PSI, Log: os.Stderr, Exe: exe, OTLP: w.OTLP, OTLPProtocol: w.OTLPProtocol}
	return w, nil
}

// runWatch checks that incidents can be written, leaves its pid in the
// incident directory, and watches until interrupted, serving metrics when
// --listen asks for them.
func runWatch(cmd *cobra.Command, o watchOptions) error {
	w, err := o.config()
	if err != nil {
		return err
	}
	if err := o.check(w); err != nil {
		return err
	}
	// The events kept are most of the heap, and long-lived: Go's default
	// (collect at twice the live heap) would let the process grow to about
	// three times the budget. A soft limit makes it collect sooner instead:
	// the budget, and 48 MiB for the rest (the live view's frames, the
	// descriptions kept, a burst's batches).
	debug.SetMemoryLimit(w.Memory + 48<<20)
	watch.RemovePartial(o.dir)
	watch.Version = Version
	pidFile := filepath.Join(o.dir, watchPIDFile)
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", pidFile, err)
	}
	defer os.Remove(pidFile)

	ctx, stop := interruptible()
	defer stop()
	stopUSR1 := snapshotOnUSR1(&w)
	defer stopUSR1()

	var serveErr chan error
	if o.listen != "" {
		var shutdown func()
		serveErr, shutdown, err = serveWatchMetrics(o.listen, &w)
		if err != nil {
			return err
		}
		defer shutdown()
	}
	ready := w.Ready
	w.Ready = func(info live.Info) {
		if ready != nil {
			ready(info)
		}
		fmt.Fprintf(os.Stderr, "whyslow watch: watching (%s); incidents in %s\n", format.Safe(o.describe(w)), format.Safe(o.dir))
	}
	err = watch.Run(ctx, w)
	if serveErr != nil {
		select {
		case e := <-serveErr:
			if e != nil && !errors.Is(e, http.ErrServerClosed) {
				return fmt.Errorf("serving metrics: %w", e)
			}
		default:
		}
	}
	return err
}

// check refuses to start what could not write an incident: no privileges,
// an incident directory that cannot be made or written, or --psi on a
// kernel without pressure stall information.
func (o watchOptions) check(w watch.Options) error {
	if err := needPrivileges(); err != nil {
		return err
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return withCode(ExitUsage, fmt.Errorf("making the incident directory: %w", err))
	}
	if err := writableDir(filepath.Join(o.dir, "x")); err != nil {
		return err
	}
	if len(w.PSI) > 0 {
		if _, err := os.Stat("/proc/pressure/io"); err != nil {
			return withCode(ExitNoCapture, fmt.Errorf("--psi: this kernel gives no pressure stall information (/proc/pressure): CONFIG_PSI, or boot with psi=1"))
		}
	}
	return nil
}

// snapshotOnUSR1 asks watch for a snapshot at each SIGUSR1 (one waiting at
// most: signals sent while one waits are one snapshot), and returns what
// stops listening.
func snapshotOnUSR1(w *watch.Options) (stop func()) {
	snap := make(chan struct{}, 1)
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			select {
			case snap <- struct{}{}:
			default:
			}
		}
	}()
	w.Snapshot = snap
	return func() { signal.Stop(usr1) }
}

// serveWatchMetrics serves on listen the live exporter's metrics and watch's
// own (incidents, triggers, drops, OTLP), once watch is ready: w's Frame,
// Incident and Ready feed them. It returns the server's error channel and
// what shuts the server down.
func serveWatchMetrics(listen string, w *watch.Options) (chan error, func(), error) {
	col := exporter.New(exporter.Options{GroupBy: exporter.ByCgroup, Groups: 20, Devices: 16, Every: time.Second})
	incidents := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "whyslow_incidents_total",
		Help: "Incidents written by whyslow watch, by what triggered them."}, []string{"trigger"})
	last := prometheus.NewGauge(prometheus.GaugeOpts{Name: "whyslow_last_incident_timestamp_seconds",
		Help: "When whyslow watch last wrote an incident (Unix time)."})
	counters := &watch.Counters{}
	w.Counters = counters
	dropped := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "whyslow_watch_dropped_events_total",
		Help: "Events whyslow watch dropped before their window ended, to stay in its --memory budget."},
		func() float64 { return float64(counters.Dropped.Load()) })
	triggers := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "whyslow_watch_triggers_total",
		Help: "Triggers fired, written as incidents or counted in a cooldown."},
		func() float64 { return float64(counters.Triggers.Load()) })
	otlpSent := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "whyslow_watch_otlp_sent_total",
		Help: "Incidents whyslow watch sent to its --otlp endpoint."},
		func() float64 { return float64(counters.OTLPSent.Load()) })
	otlpDropped := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "whyslow_watch_otlp_dropped_total",
		Help: "Incidents whyslow watch did not send to its --otlp endpoint: the queue was full or the endpoint did not take them."},
		func() float64 { return float64(counters.OTLPDropped.Load()) })
	srv, ln, err := metricsServer(listen, col, incidents, last, dropped, triggers, otlpSent, otlpDropped)
	if err != nil {
		return nil, nil, err
	}
	serveErr := make(chan error, 1)
	w.Frame = col.Add
	w.Incident = func(inc watch.Incident) {
		if inc.Err == nil {
			incidents.WithLabelValues(inc.Trigger.Kind).Inc()
			last.Set(float64(inc.Time.UnixNano()) / 1e9)
		}
	}
	w.Ready = func(info live.Info) {
		col.SetInfo(info)
		go func() { serveErr <- srv.Serve(ln) }()
		fmt.Fprintf(os.Stderr, "whyslow watch: serving http://%s/metrics\n", ln.Addr())
	}
	shutdown := func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
		ln.Close()
	}
	return serveErr, shutdown, nil
}

// describe lists the triggers in force, for the start line.
func (o watchOptions) describe(w watch.Options) string {
	var t []string
	if w.SlowRequest > 0 {
		t = append(t, "requests over "+w.SlowRequest.String())
	}
	if w.Stall > 0 {
		t = append(t, "stalls over "+w.Stall.String())
	}
	for _, r := range w.PSI {
		t = append(t, "pressure "+r.String())
	}
	t = append(t, "SIGUSR1")
	return fmt.Sprintf("window %s, after %s, triggers: %s", w.Window, w.After, strings.Join(t, ", "))
}

// watchPIDFile, in the incident directory, names the watch writing there:
// `watch --snapshot` finds it so.
const watchPIDFile = ".watch.pid"

// askSnapshot signals the watch writing to dir for an incident now.
func askSnapshot(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, watchPIDFile))
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("no watch writes to %s (%v)", dir, err))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 || pid > maxPID {
		return withCode(ExitUsage, fmt.Errorf("%s: not a pid", filepath.Join(dir, watchPIDFile)))
	}
	// A watch killed with SIGKILL leaves its pid file; the pid may be
	// another program's by now.
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || !strings.Contains(filepath.Base(exe), "whyslow") {
		return withCode(ExitUsage, fmt.Errorf("no watch writes to %s: pid %d is not whyslow", dir, pid))
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("asking pid %d for a snapshot: %w", pid, err)
	}
	fmt.Fprintf(os.Stderr, "whyslow: asked the watch (pid %d) for an incident; it writes it in %s\n", pid, format.Safe(dir))
	return nil
}

// writeIncident is the child a watch hands an incident's events to: it
// writes the recording, and says a full disk by its exit code.
func writeIncident() error {
	err := watch.WriteRecording(os.Stdin)
	if errors.Is(err, store.ErrDiskFull) || errors.Is(err, syscall.ENOSPC) {
		return withCode(watch.ExitDiskFull, err)
	}
	return err
}
