package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
	"golang.org/x/sys/unix"
)

// Incident is one written: its files and what explained it.
type Incident struct {
	Name     string // DIR/<name>.db, .txt, .json, .html
	Trigger  Trigger
	Also     int // triggers that fired while it was being written, or in its cooldown
	Time     time.Time
	PID      uint32 // the process explained first
	Verdict  string
	Culprit  string
	Events   int
	Dropped  uint64
	Err      error // the incident could not be written (a full disk)
	Requests bool
}

// incidents writes an incident for each trigger outside a cooldown, one at a
// time, until the triggers end.
func (w *watcher) incidents(ctx context.Context) {
	var quietUntil time.Time
	var suppressed int
	var diskFull bool
	for t := range w.fired {
		if time.Now().Before(quietUntil) && t.Kind != KindSnapshot { // asked for by hand: always written
			suppressed++
			continue
		}
		fired := time.Now()
		// Let the slow thing end, or go on a while, inside the window: --after,
		// and while its request is unanswered or its thread still stalled, up
		// to maxLinger more (an incident that ends inside the stall cannot say
		// how long it was, nor cut its request).
		select {
		case <-time.After(w.o.After):
		case <-ctx.Done():
		}
		for deadline := time.Now().Add(maxLinger); ctx.Err() == nil && time.Now().Before(deadline) && w.stillSlow(t); {
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		also := suppressed
		for drained := false; !drained; { // triggers of the same moment are this incident's
			select {
			case _, ok := <-w.fired:
				if !ok {
					drained = true
					break
				}
				also++
			default:
				drained = true
			}
		}
		suppressed = 0
		inc := w.write(t, fired)
		inc.Also = also
		quietUntil = time.Now().Add(w.o.Cooldown)
		switch {
		case errors.Is(inc.Err, errDiskFull) || errors.Is(inc.Err, unix.ENOSPC):
			if !diskFull {
				fmt.Fprintf(w.o.Log, "whyslow watch: %s: the incident disk is full; watching on, writing no incident until there is room (%v)\n",
					format.Safe(w.o.Dir), format.Safe(firstLineOf(inc.Err)))
			}
			diskFull = true
		case inc.Err != nil:
			fmt.Fprintf(w.o.Log, "whyslow watch: writing an incident for %s: %s\n", format.Safe(describeTrigger(t)), format.Safe(firstLineOf(inc.Err)))
		default:
			diskFull = false
			w.logIncident(inc)
			if w.otlp != nil {
				w.otlp.add(inc)
			}
		}
		if w.o.Incident != nil {
			w.o.Incident(inc)
		}
		rotate(w.o.Dir, w.o.Keep, w.o.MaxDisk)
	}
}

// write writes one incident: the recording of the window, then its
// explanations beside it.
func (w *watcher) write(t *Trigger, fired time.Time) Incident {
	inc := Incident{Trigger: *t, Time: fired}
	inc.Name = fired.UTC().Format("20060102T150405Z") + "-" + t.Kind
	// From --window before the slow thing began (or --window + --after
	// before now, for a snapshot), never before capture began.
	begin := t.At
	if t.Kind == KindSnapshot || begin == 0 {
		begin = monotonicNow() - uint64(w.o.After)
	}
	from := uint64(0)
	if begin > uint64(w.o.Window) {
		from = begin - uint64(w.o.Window)
	}
	from = max(from, w.started.Load())
	// The waits still going on end the window as a recording's end does:
	// a server idle in accept through the whole window waited all of it.
	var waiting []*event.OffCPU
	var now uint64
	if r := w.waits.Load(); r != nil {
		now, waiting = r.Now()
		for _, o := range waiting { // the engine's list names no thread
			o.Comm = threadComm(o.PID, o.TID)
		}
	}
	win := w.flight.snapshot(from)
	win.addWaiting(now, waiting, w.self)
	if r := w.waits.Load(); r != nil {
		// The limited cgroups' counts now end the window, as a recording's
		// end does: its verdict counts the throttling since the window's
		// first reading.
		win.events = append(win.events, r.Limits(event.QuotaEnd)...)
	}
	inc.Events, inc.Dropped = len(win.events), win.dropped
	w.mu.Lock()
	lost := w.lost.since(win.start)
	w.mu.Unlock()
	inc.PID = t.PID
	if inc.PID == 0 {
		inc.PID = mostStalled(win.events, t.Kind, w.ours)
	}
	inc.Requests = t.Kind == KindSlowRequest
	final := filepath.Join(w.o.Dir, inc.Name+".db")
	partial := filepath.Join(w.o.Dir, partialPrefix+inc.Name+".db")
	if err := w.record(partial, win, t, inc.PID, lost); err != nil {
		os.Remove(partial)
		os.Remove(partial + ".wal")
		inc.Err = err
		return inc
	}
	if err := os.Rename(partial, final); err != nil {
		os.Remove(partial)
		inc.Err = err
		return inc
	}
	inc.Verdict, inc.Culprit, inc.Err = w.explain(inc)
	return inc
}

// maxLinger bounds how long an incident waits, past --after, for its slow
// request to be answered or its stalled thread to run.
const maxLinger = 30 * time.Second

// stillSlow says whether a trigger's slow thing goes on: its request is
// unanswered, or its thread is still in a wait that stalls it.
func (w *watcher) stillSlow(t *Trigger) bool {
	switch t.Kind {
	case KindSlowRequest:
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.serving != nil && w.serving.unanswered(t.PID, t.At)
	case KindStall:
		r := w.waits.Load()
		if r == nil {
			return false
		}
		_, waiting := r.Now()
		for _, o := range waiting {
			if o.TID == t.TID && stalling(o) {
				return true
			}
		}
	}
	return false
}

// partialPrefix names an incident still being written: a watch killed
// meanwhile leaves it, and the next removes it.
const partialPrefix = ".partial-"

// record writes the window as a recording, as `whyslow record` would have,
// by a child whyslow (handoff.go).
func (w *watcher) record(path string, win window, t *Trigger, pid uint32, lost map[string]uint64) error {
	return handOff(&w.own, w.o.Exe, path, w.meta(win, t, pid), lost, win.events)
}

func (w *watcher) meta(win window, t *Trigger, pid uint32) map[string]string {
	host, _ := os.Hostname()
	var uts unix.Utsname
	unix.Uname(&uts)
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	now := time.Now()
	offset := now.UnixNano() - ts.Nano() // wall = mono + offset
	start := time.Unix(0, int64(win.start)+offset)
	end := time.Unix(0, int64(win.end)+offset)
	begin, exit := lifetime(win, pid)
	opts := w.o.Capture
	m := map[string]string{
		"host": event.EncodeText(host), "kernel": unix.ByteSliceToString(uts.Release[:]), "arch": runtime.GOARCH,
		"whyslow_version": Version,
		"start_wall":      start.UTC().Format(time.RFC3339Nano), "end_wall": end.UTC().Format(time.RFC3339Nano),
		"clock_offset_ns": strconv.FormatInt(offset, 10), "start_mono": strconv.FormatUint(win.start, 10),
		"duration_ns": strconv.FormatUint(win.end-win.start, 10),
		"level":       opts.Level.String(), "scope": "system", "command": "",
		"flavour": w.info.Flavour, "missing": strings.Join(w.info.Missing, ","),
		"slow_ns": strconv.FormatInt(opts.Slow.Nanoseconds(), 10), "recording": event.EncodeText(path(w.o.Dir)),
		"whyslow_pid": strconv.Itoa(int(w.self)), "requests": strconv.FormatBool(opts.Requests),
		"arrivals":   event.ArrivalsPerConnection,
		"target_pid": strconv.Itoa(int(pid)), "exit_code": "-1",
		"target_start_mono": strconv.FormatUint(begin, 10), "target_end_mono": strconv.FormatUint(exit, 10),
		// What fired, for the incident's reader (docs/watch.md).
		"trigger": t.Kind, "trigger_mono": strconv.FormatUint(t.At, 10), "trigger_pid": strconv.Itoa(int(t.PID)),
		"trigger_tid": strconv.Itoa(int(t.TID)), "trigger_detail": event.EncodeText(t.Detail),
		"trigger_cgroup": event.EncodeText(t.Cgroup),
		"window_dropped": strconv.FormatUint(win.dropped, 10),
	}
	maps.Copy(m, event.PayloadMeta(opts.Kept()))
	return m
}

func path(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// lifetime is the part of the window the process explained first lived in:
// from its fork (or the window's start), to its exit (0: it outlived the
// window). Its time before it existed is no wait of its.
func lifetime(win window, pid uint32) (begin, end uint64) {
	begin = win.start
	if pid == 0 {
		return begin, 0
	}
	for _, ev := range win.events {
		switch v := ev.(type) {
		case *event.Fork:
			if v.ChildPID == pid && v.ChildTID == pid && v.Time > begin {
				begin = v.Time
			}
		case *event.Exit:
			if v.PID == pid && v.GroupDead {
				end = v.Time
			}
		}
	}
	return begin, end
}

// mostStalled picks the process an incident with no process of its own
// explains first: the one that waited longest, in the window, for what the
// trigger is about (storage for io pressure and by hand, a CPU for cpu).
func mostStalled(events []event.Event, kind string, ours func(pid uint32) bool) uint32 {
	waited := map[uint32]uint64{}
	for _, ev := range events {
		o, ok := ev.(*event.OffCPU)
		if !ok || ours(o.PID) || o.PID == 0 {
			continue
		}
		switch kind {
		case "psi-cpu":
			if o.Reason == event.ReasonRunqueue || o.State == 'R' {
				waited[o.PID] += o.Runq
			}
		default:
			if o.Reason.Disk() || o.State == 'D' {
				waited[o.PID] += o.Off
			}
		}
	}
	var best uint32
	for pid, ns := range waited {
		if ns > waited[best] || ns == waited[best] && pid < best {
			best = pid
		}
	}
	return best
}

// explain writes the incident's explanations beside its recording, each by
// a whyslow of its own (an analysis's memory is given back when it ends,
// and a watch that runs for weeks must not grow): text, JSON and HTML. It
// returns the verdict and the culprit for the log line.
func (w *watcher) explain(inc Incident) (verdict, culprit string, err error) {
	base := filepath.Join(w.o.Dir, inc.Name)
	rec := base + ".db"
	pid := []string{}
	if inc.PID != 0 {
		pid = []string{"--pid", strconv.Itoa(int(inc.PID))}
	}
	var text strings.Builder
	fmt.Fprintf(&text, "whyslow watch: incident %s\ntrigger: %s\n", inc.Name, describeTrigger(&inc.Trigger))
	if inc.Dropped > 0 {
		fmt.Fprintf(&text, "(the memory budget dropped %d events: the window starts later than asked)\n", inc.Dropped)
	}
	text.WriteString("\n")
	var errs []error
	if inc.Requests && inc.PID != 0 {
		out, err := w.run(append([]string{"report", "requests", rec, "--limit", "3"}, pid...)...)
		text.Write(out)
		text.WriteString("\n")
		errs = append(errs, err)
		js, err := w.run(append([]string{"report", "requests", rec, "--json"}, pid...)...)
		errs = append(errs, err, os.WriteFile(base+".requests.json", js, 0o600))
		verdict, culprit = requestVerdict(js)
	}
	explained := false
	if inc.PID != 0 {
		out, err := w.run(append([]string{"report", "explain", rec}, pid...)...)
		if noSuchProcess(err) {
			// The process left nothing in the window (its events were
			// lost, or dropped by the memory budget): the machine's
			// usage explains the incident instead, and says why.
			fmt.Fprintf(&text, "(pid %d left no events in the incident's recording: the machine's usage instead)\n\n", inc.PID)
			pid = nil
		} else {
			explained = true
			text.Write(out)
			errs = append(errs, err)
			js, err := w.run(append([]string{"report", "explain", rec, "--json"}, pid...)...)
			errs = append(errs, err, os.WriteFile(base+".json", js, 0o600))
			if verdict == "" {
				verdict, culprit = explainVerdict(js)
			}
		}
	}
	if !explained {
		out, err := w.run("report", "usage", rec)
		text.Write(out)
		errs = append(errs, err)
	}
	_, err = w.run(append([]string{"report", "html", rec, "-o", base + ".html"}, pid...)...)
	errs = append(errs, err, os.WriteFile(base+".txt", []byte(text.String()), 0o600))
	return verdict, culprit, errors.Join(errs...)
}

// noSuchProcess says whether an analysis refused its --pid: the recording
// holds no such process (exit code 2, a usage error, with that message).
func noSuchProcess(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 2 && strings.Contains(err.Error(), "the recording holds no such process")
}

// run runs an analysis of an incident and returns its output.
func (w *watcher) run(args ...string) ([]byte, error) {
	cmd := exec.Command(w.o.Exe, args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := w.own.output(cmd, false)
	if err != nil {
		return out, fmt.Errorf("whyslow %s: %w: %s", args[1], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Version is whyslow's, written in each incident's metadata (set by the CLI).
var Version = "dev"

// result is a report's JSON, whether wrapped in {"result": ...} or not.
func result(js []byte) []byte {
	var wrap struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(js, &wrap) == nil && len(wrap.Result) > 0 {
		return wrap.Result
	}
	return js
}

// explainVerdict reads the verdict and the first blamed process of an
// explanation's JSON.
func explainVerdict(js []byte) (verdict, culprit string) {
	var x struct {
		Verdict struct {
			Summary string `json:"summary"`
		} `json:"verdict"`
		Blame []struct {
			Summary string `json:"summary"`
		} `json:"blame"`
	}
	if json.Unmarshal(result(js), &x) != nil {
		return "", ""
	}
	if len(x.Blame) > 0 {
		culprit = x.Blame[0].Summary
	}
	return x.Verdict.Summary, culprit
}

// requestVerdict reads the slowest request's label, verdict and first blame.
func requestVerdict(js []byte) (verdict, culprit string) {
	var x struct {
		Requests []struct {
			Label     string  `json:"label"`
			DurationS float64 `json:"duration_s"`
			Verdict   struct {
				Summary string `json:"summary"`
			} `json:"verdict"`
			Blame []struct {
				Summary string `json:"summary"`
			} `json:"blame"`
		} `json:"requests"`
	}
	if json.Unmarshal(result(js), &x) != nil || len(x.Requests) == 0 {
		return "", ""
	}
	r := x.Requests[0]
	verdict = fmt.Sprintf("%s %.2f s: %s", r.Label, r.DurationS, r.Verdict.Summary)
	if len(r.Blame) > 0 {
		culprit = r.Blame[0].Summary
	}
	return verdict, culprit
}

// logIncident says an incident in one line: time, trigger, verdict, culprit.
func (w *watcher) logIncident(inc Incident) {
	line := fmt.Sprintf("whyslow watch: incident %s: %s", inc.Name, describeTrigger(&inc.Trigger))
	if inc.Verdict != "" {
		line += "; verdict: " + inc.Verdict
	}
	if inc.Culprit != "" {
		line += "; culprit: " + inc.Culprit
	}
	if inc.Also > 0 {
		line += fmt.Sprintf("; %d more triggers", inc.Also)
	}
	fmt.Fprintf(w.o.Log, "%s -> %s\n", format.Safe(line), format.Safe(filepath.Join(w.o.Dir, inc.Name+".txt")))
}

func firstLineOf(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
