package reports

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
)

// Sampled is where a target's wall time went by the sampled capture's
// looks at its threads in /proc: each tick's look at the thread its wall
// time is charged to (the main thread, or the child it waits for) counts
// 1/n of it. Every share comes with its error: a 95% bound from the n
// samples (binomial, Wilson's interval).
type Sampled struct {
	Target SampledTarget `json:"target"`
	// Verdict: the largest share; kind "top" when it has half or more of
	// the wall time, "mixed" when none has, "none" without a sample.
	Verdict SampledVerdict `json:"verdict"`
	Hz      int            `json:"hz"`
	WallS   float64        `json:"wall_s"`
	// Samples are the ticks charged to a thread; Looks all the threads'
	// looks in them.
	Samples int `json:"samples"`
	Looks   int `json:"thread_samples"`
	// Shares of the wall time by reason, largest first.
	Shares []SampledShare `json:"shares"`
	// Threads: each thread's own looks by reason.
	Threads []SampledThread `json:"threads"`
	// Objects: what the charged waits were on (a file, a peer), most first.
	Objects []SampledObject `json:"objects"`
	// Processes followed, the target's and its descendants'.
	Processes int `json:"processes"`
	// NoStack: no kernel stack was readable (no root): waits were told by
	// their syscall, file and wait channel. Vanished: looks at threads that
	// exited meanwhile, dropped.
	NoStack  bool   `json:"no_stack"`
	Vanished uint64 `json:"vanished"`
}

// SampledTarget is what was sampled, from the recording's meta.
type SampledTarget struct {
	Command  string `json:"command"`
	PID      int    `json:"pid"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// SampledVerdict is the largest share of the wall time.
type SampledVerdict struct {
	Basis  string       `json:"basis"` // "samples"
	Kind   string       `json:"kind"`
	Reason event.Reason `json:"reason"`
	Share  float64      `json:"share"`
	Error  float64      `json:"error"`
	// Summary is output's sentence of these fields (filled by output).
	Summary string `json:"summary"`
}

// SampledShare is one reason's share of the wall time.
type SampledShare struct {
	Reason  event.Reason `json:"reason"`
	Samples float64      `json:"samples"` // a runnable thread's look is split between cpu and its wait
	Share   float64      `json:"share"`
	Error   float64      `json:"error"` // ± this, 95%
	S       float64      `json:"s"`
}

// SampledThread is one thread's looks.
type SampledThread struct {
	PID      uint32                   `json:"pid"`
	TID      uint32                   `json:"tid"`
	Comm     string                   `json:"comm"`
	Samples  int                      `json:"samples"`
	ByReason map[event.Reason]float64 `json:"by_reason"` // shares of the time its looks stand for
}

// SampledObject is a file or peer the charged waits were on.
type SampledObject struct {
	Object string       `json:"object"`
	Kind   string       `json:"kind"`
	Reason event.Reason `json:"reason"`
	Share  float64      `json:"share"` // of the wall time
}

// SampledTime reads a sampled recording's looks and names each by
// classify, as the traced waits are named.
func SampledTime(s *source.Source) (*Sampled, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	out := &Sampled{Target: sampledTarget(s.Meta), Verdict: SampledVerdict{Basis: "samples", Kind: "none"}}
	out.Hz, _ = strconv.Atoi(s.Meta["hz"])
	out.Vanished, _ = strconv.ParseUint(s.Meta["samples_vanished"], 10, 64)
	out.NoStack = s.Meta["samples_no_stack"] == "true"
	frames, err := procSampleStacks(s)
	if err != nil {
		return nil, err
	}
	var ticks int
	var first, last int64
	if err := s.QueryRow(sqlOf("sampled_ticks")).Scan(&ticks, &out.Samples, &first, &last); err != nil {
		return nil, fmt.Errorf("counting the samples: %w", err)
	}
	looks, err := sampledLooks(s)
	if err != nil {
		return nil, err
	}
	end, _ := strconv.ParseUint(s.Meta["target_end_mono"], 10, 64)
	t := tallyLooks(looks, frames, timedOutLooks(looks, end), out.Hz)
	out.Looks = len(looks)
	out.Processes = len(t.procs)
	start, _ := strconv.ParseUint(s.Meta["target_start_mono"], 10, 64)
	switch {
	case start > 0 && end > start:
		// The target's own wall time, as a traced run's (a command
		// shorter than a tick is not a tick long).
		out.WallS = float64(end-start) / 1e9
	case out.Samples > 0 && out.Hz > 0:
		// The wall time the ticks stand for: from the first to the last,
		// and one interval for the last.
		out.WallS = float64(last-first)/1e9 + 1/float64(out.Hz)
	}
	n := float64(out.Samples)
	out.Shares = sampledShares(t.byReason, n, out.WallS)
	if len(out.Shares) > 0 {
		top := out.Shares[0]
		out.Verdict.Reason, out.Verdict.Share, out.Verdict.Error, out.Verdict.Kind = top.Reason, top.Share, top.Error, "mixed"
		if top.Share >= 0.5 {
			out.Verdict.Kind = "top"
		}
	}
	out.Threads = sampledThreads(t)
	out.Objects = sampledObjects(t.objects, n)
	return out, nil
}

// sampledLooks reads every look at the target's threads, in time order.
func sampledLooks(s *source.Source) ([]sampledLook, error) {
	rows, err := s.Query(sqlOf("sampled_looks"))
	if err != nil {
		return nil, fmt.Errorf("reading the samples: %w", err)
	}
	defer rows.Close()
	var looks []sampledLook
	for rows.Next() {
		var l sampledLook
		if err := rows.Scan(&l.pid, &l.tid, &l.comm, &l.state, &l.nr, &l.fkind, &l.object, &l.wchan, &l.stack,
			&l.ran, &l.delay, &l.interval, &l.runnable, &l.throttled, &l.sockets, &l.path, &l.ts, &l.timeoutAt, &l.reclaim); err != nil {
			return nil, fmt.Errorf("reading the samples: %w", err)
		}
		looks = append(looks, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the samples: %w", err)
	}
	return looks, nil
}

// sampledTally is what the looks add up to, before it is turned into
// shares: the wall time's samples by reason and object (from the looks on
// the path the wall time is charged to), each thread's own time by reason.
type sampledTally struct {
	byReason map[event.Reason]float64
	threads  map[uint32]*SampledThread
	weights  map[uint32]float64 // by thread, the time its looks stand for
	objects  map[[3]string]float64
	procs    map[uint32]bool
}

// tallyLooks classifies each look (timedOut says which were at a wait its
// own timeout ended) and adds it up by thread and, on the charged path,
// by reason and object.
func tallyLooks(looks []sampledLook, frames map[int32][]string, timedOut []bool, hz int) sampledTally {
	t := sampledTally{byReason: map[event.Reason]float64{}, threads: map[uint32]*SampledThread{},
		weights: map[uint32]float64{}, objects: map[[3]string]float64{}, procs: map[uint32]bool{}}
	for i, l := range looks {
		t.procs[l.pid] = true
		r, cpu := classify.SampleReason(classify.Sample{State: l.state, Syscall: int32(l.nr), Frames: frames[l.stack], Wchan: l.wchan,
			FileKind: event.FileKind(l.fkind), PollOnSockets: l.sockets, RanNS: l.ran, RunDelayNS: l.delay, IntervalNS: l.interval, WasRunnable: l.runnable,
			Throttled: l.throttled, TimedOut: timedOut[i], Reclaim: l.reclaim})
		th := t.threads[l.tid]
		if th == nil {
			th = &SampledThread{PID: l.pid, TID: l.tid, Comm: l.comm, ByReason: map[event.Reason]float64{}}
			t.threads[l.tid] = th
		}
		// A look stands for the time since the thread's last one: a thread
		// asleep for a while is looked at less often than every tick
		// (procsample's backOff), and its look then stands for its whole
		// interval, the same wait all along.
		w := float64(l.interval)
		if w == 0 && hz > 0 {
			w = 1e9 / float64(hz)
		}
		th.Samples++
		t.weights[l.tid] += w
		th.ByReason[event.ReasonCPU] += cpu * w
		th.ByReason[r] += (1 - cpu) * w
		if !l.path {
			continue
		}
		t.byReason[event.ReasonCPU] += cpu
		t.byReason[r] += 1 - cpu
		if l.object != "" && cpu < 1 {
			t.objects[[3]string{l.object, event.FileKind(l.fkind).String(), string(r)}] += 1 - cpu
		}
	}
	return t
}

// sampledShares turns the samples by reason (of n) into shares of the
// wall time, each with its error, largest first.
func sampledShares(byReason map[event.Reason]float64, n, wallS float64) []SampledShare {
	var shares []SampledShare
	for r, k := range byReason {
		if k <= 0 {
			continue
		}
		p := k / n
		shares = append(shares, SampledShare{Reason: r, Samples: k, Share: p, Error: binomialError(p, n), S: p * wallS})
	}
	sort.Slice(shares, func(i, j int) bool {
		if shares[i].Share != shares[j].Share {
			return shares[i].Share > shares[j].Share
		}
		return shares[i].Reason < shares[j].Reason
	})
	return shares
}

// sampledThreads gives each thread's time by reason as a share of the time
// its own looks stand for, in pid and tid order.
func sampledThreads(t sampledTally) []SampledThread {
	var out []SampledThread
	for _, th := range t.threads {
		for r, k := range th.ByReason {
			if k <= 0 {
				delete(th.ByReason, r)
				continue
			}
			th.ByReason[r] = k / t.weights[th.TID]
		}
		out = append(out, *th)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.TID < b.TID
	})
	return out
}

// sampledObjects gives the 5 objects the charged waits were most on, with
// their share of the n samples.
func sampledObjects(objects map[[3]string]float64, n float64) []SampledObject {
	var out []SampledObject
	for k, v := range objects {
		out = append(out, SampledObject{Object: k[0], Kind: k[1], Reason: event.Reason(k[2]), Share: v / n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Share != out[j].Share {
			return out[i].Share > out[j].Share
		}
		return out[i].Object < out[j].Object
	})
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

// sampledLook is one row of sampled_looks.
type sampledLook struct {
	pid, tid                           uint32
	comm, object, wchan                string
	state                              uint8
	nr                                 int16
	fkind                              uint8
	stack                              int32
	ran, delay, interval               uint64
	runnable, throttled, sockets, path bool
	ts, timeoutAt                      uint64
	reclaim                            bool
}

// timedOutLooks says which looks (in time order) were at a wait its own
// timeout ended: a wait with a timeout (timeout_at, the earliest the
// timeout could end it) seen to end no earlier than that. A wait is a
// thread's run of looks that found it had not run since the one before
// (schedstat unchanged: ran and run delay 0, the same timeout); it ended
// by the thread's next look that found it had run, or by the target's end
// (end, CLOCK_MONOTONIC ns; 0 unknown: its last look). A look sees only
// that a wait is over, not what ended it: a wait that something else ended
// between the deadline and the next look is counted timed out.
func timedOutLooks(looks []sampledLook, end uint64) []bool {
	out := make([]bool, len(looks))
	byTID := map[uint32][]int{}
	for i, l := range looks {
		byTID[l.tid] = append(byTID[l.tid], i)
	}
	for _, idx := range byTID {
		for k := 0; k < len(idx); {
			first := looks[idx[k]]
			n := k + 1
			for n < len(idx) {
				l := looks[idx[n]]
				if l.ran != 0 || l.delay != 0 || l.timeoutAt != first.timeoutAt || l.state != first.state || l.nr != first.nr {
					break
				}
				n++
			}
			if first.timeoutAt != 0 {
				over := end
				if n < len(idx) {
					over = looks[idx[n]].ts
				} else if over == 0 {
					over = looks[idx[n-1]].ts
				}
				if first.timeoutAt <= over {
					for _, i := range idx[k:n] {
						out[i] = true
					}
				}
			}
			k = n
		}
	}
	return out
}

func sampledTarget(meta map[string]string) SampledTarget {
	t := SampledTarget{Command: strings.Join(strings.Split(meta["command"], "\x00"), " ")}
	t.PID, _ = strconv.Atoi(meta["target_pid"])
	if meta["scope"] == "command" {
		if code, err := strconv.Atoi(meta["exit_code"]); err == nil && code >= 0 {
			t.ExitCode = &code
		}
	}
	return t
}

func procSampleStacks(s *source.Source) (map[int32][]string, error) {
	rows, err := s.Query(sqlOf("sampled_stacks"))
	if err != nil {
		return nil, fmt.Errorf("reading the samples' stacks: %w", err)
	}
	defer rows.Close()
	out := map[int32][]string{}
	for rows.Next() {
		var id int32
		var list []any
		if err := rows.Scan(&id, &list); err != nil {
			return nil, fmt.Errorf("reading the samples' stacks: %w", err)
		}
		for _, f := range list {
			if name, ok := f.(string); ok {
				out[id] = append(out[id], name)
			}
		}
	}
	return out, rows.Err()
}

// binomialError is the 95% bound of a share p measured from n samples: the
// larger distance from p to the ends of Wilson's score interval, which
// stays honest at p near 0 or 1 and at small n, where p ± 1.96·√(p(1-p)/n)
// claims none.
func binomialError(p, n float64) float64 {
	if n <= 0 {
		return 1
	}
	const z = 1.96
	den := 1 + z*z/n
	center := (p + z*z/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / den
	return math.Max(math.Abs(center-half-p), math.Abs(center+half-p))
}
