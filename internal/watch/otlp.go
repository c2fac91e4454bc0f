package watch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/whyslow/whyslow/internal/format"
)

// otlpQueued bounds the incidents waiting to be sent: while the endpoint is
// down they wait here (their recordings stay in the incident directory),
// and past this many the newest is dropped, counted and said.
const otlpQueued = 8

// otlpGrace is how long, once the watch is asked to end, the incidents
// still waiting have to reach the endpoint.
const otlpGrace = 5 * time.Second

// otlpSender sends each incident, once explained, to an OTLP endpoint, by a
// `whyslow export otlp` of its own (as incidents are explained: an
// analysis's memory is given back when it ends). A slow request's incident
// sends its slow requests; another, its process's critical path.
type otlpSender struct {
	o             *Options
	own           *ownChildren // watch's, whose export processes these are
	queue         chan Incident
	done          chan struct{}
	sent, dropped atomic.Uint64
}

func newOTLPSender(o *Options, own *ownChildren) *otlpSender {
	return &otlpSender{o: o, own: own, queue: make(chan Incident, otlpQueued), done: make(chan struct{})}
}

// add queues an incident; it never blocks the watch.
func (s *otlpSender) add(inc Incident) {
	select {
	case s.queue <- inc:
	default:
		s.drop(inc, fmt.Errorf("%d incidents already wait for the endpoint", otlpQueued))
	}
}

// run sends the queued incidents until the queue is closed; then those
// left have otlpGrace once ctx ends.
func (s *otlpSender) run(ctx context.Context) {
	defer close(s.done)
	send, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-ctx.Done()
		select {
		case <-time.After(otlpGrace):
			cancel()
		case <-s.done:
		}
	}()
	for inc := range s.queue {
		if err := s.send(send, inc); err != nil {
			s.drop(inc, err)
			continue
		}
		s.sent.Add(1)
		if c := s.o.Counters; c != nil {
			c.OTLPSent.Add(1)
		}
	}
}

// close ends the queue and waits for run to finish with it.
func (s *otlpSender) close() {
	close(s.queue)
	<-s.done
	if n := s.dropped.Load(); n > 0 {
		fmt.Fprintf(s.o.Log, "whyslow watch: incidents sent to %s: %d; dropped: %d\n", format.Safe(s.o.OTLP), s.sent.Load(), n)
	}
}

func (s *otlpSender) send(ctx context.Context, inc Incident) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the watch ended first")
	}
	args := []string{"export", "otlp", filepath.Join(s.o.Dir, inc.Name+".db"), "--endpoint", s.o.OTLP}
	if s.o.OTLPProtocol != "" {
		args = append(args, "--protocol", s.o.OTLPProtocol)
	}
	switch {
	case inc.Requests && s.o.SlowRequest > 0:
		args = append(args, "--min", s.o.SlowRequest.String())
	case inc.PID != 0:
		args = append(args, "--critical-path", "--pid", strconv.Itoa(int(inc.PID)))
	default:
		args = append(args, "--critical-path")
	}
	cmd := exec.CommandContext(ctx, s.o.Exe, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := s.own.output(cmd, true)
	if err != nil {
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("%w: %s", err, strings.TrimPrefix(line, "whyslow: "))
	}
	return nil
}

func (s *otlpSender) drop(inc Incident, why error) {
	n := s.dropped.Add(1)
	if c := s.o.Counters; c != nil {
		c.OTLPDropped.Add(1)
	}
	fmt.Fprintf(s.o.Log, "whyslow watch: incident %s not sent to %s (%d dropped so far): %s\n",
		format.Safe(inc.Name), format.Safe(s.o.OTLP), n, format.Safe(firstLineOf(why)))
}
