// Package requests cuts a server's connections into requests by their
// protocol (internal/analysis/protocol, else read-then-write), walks each
// request's critical path (internal/analysis/critpath), and gives each a
// verdict, its files and blame (internal/analysis/explain). It returns
// facts; output words them.
package requests

import (
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/whyslow/whyslow/internal/analysis/critpath"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// Requests is what a server did, request by request: the schema
// whyslow.requests/v1 (docs/requests-json.md).
type Requests struct {
	Schema string `json:"schema"`
	Count  int    `json:"count"`
	// Payload: the recording holds each request's first bytes, so HTTP
	// requests are labelled by their request line.
	Payload  bool         `json:"payload"`
	LatencyS Quantiles    `json:"latency_s"`
	ByLabel  []LabelStats `json:"by_label"`
	Requests []Entry      `json:"requests"` // slowest first
	// Approximate: some requests were served by a thread that served other
	// connections meanwhile (an event loop); their waits are the thread's in
	// the request's window, not the request's alone.
	Approximate bool              `json:"approximate"`
	LostEvents  uint64            `json:"lost_events"`
	Lost        map[string]uint64 `json:"lost_by_source,omitempty"`
}

type Quantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

type LabelStats struct {
	Label   string  `json:"label"`
	Count   int     `json:"count"`
	P50S    float64 `json:"p50_s"`
	P99S    float64 `json:"p99_s"`
	MaxS    float64 `json:"max_s"`
	Verdict string  `json:"verdict"` // the most common verdict of its requests
}

// Entry is one request: from its first bytes' arrival (or, where
// that is unknown, the server's read of them) to the last bytes it wrote back.
type Entry struct {
	PID  uint32 `json:"pid"`
	TID  uint32 `json:"tid"` // the thread that answered
	Comm string `json:"comm"`
	Peer string `json:"peer"`
	// Local is the server's own end of the connection: ip:port, a unix
	// socket's path ("" unknown).
	Local string `json:"local,omitempty"`
	Label string `json:"label"`
	// Protocol is what the server spoke, as whyslow framed or labelled
	// the request: http, fastcgi, mysql, postgres, redis; "" unknown.
	Protocol string `json:"protocol,omitempty"`
	Begin    string `json:"begin"` // wall clock, RFC 3339 with ns
	// DurationS is server-side: first byte in to last byte written.
	DurationS float64 `json:"duration_s"`
	// QueuedS is the part before the server read the request: from its
	// first bytes' arrival (TCP) to the read that took them.
	QueuedS float64 `json:"queued_s"`
	// ClientWaitS is the part spent waiting for more of the request from
	// the client: no slowness of the server's.
	ClientWaitS float64 `json:"client_wait_s"`
	// Upstream is where the request was passed on to, if anywhere.
	Upstream    *Upstream          `json:"upstream,omitempty"`
	BytesIn     uint64             `json:"bytes_in"`
	BytesOut    uint64             `json:"bytes_out"`
	Verdict     Verdict            `json:"verdict"`
	ByReason    map[string]float64 `json:"by_reason"`
	Files       []explain.FileUse  `json:"files"`
	Blame       []explain.Blame    `json:"blame"`
	Approximate bool               `json:"approximate"`
	// SharedWith: for an approximate request, the other requests its thread
	// served in its time (the slowest first, at most 3): whose waits it shares.
	SharedWith []SharedRequest `json:"shared_with,omitempty"`
	// Timerange zooms into it: whyslow report log REC --timerange ...
	Timerange string `json:"timerange"`
	// TraceParent is the W3C traceparent header its first bytes carried
	// (an HTTP request with one in its first PAYLOAD_LEN bytes), as sent.
	TraceParent string `json:"traceparent,omitempty"`

	begin, end uint64
	conn       connKey
	path       explain.CriticalPath
}

// Verdict is the reason that took most of a request's path, and what
// its sentence names with it.
type Verdict struct {
	Reason string              `json:"reason"`
	Share  float64             `json:"share"`
	Kind   explain.VerdictKind `json:"kind"` // explain.VerdictTop, or explain.VerdictNone
	// Object is what the path waited on most for the reason; HeldUpBy the
	// process outside the target that ended those waits most.
	Object   string         `json:"object,omitempty"`
	HeldUpBy *explain.Actor `json:"held_up_by,omitempty"`
	// For the slowest requests (Options.Explained): the files it
	// used in bulk, when ten or more, and the one blame entry that explains
	// the verdict, when there is one.
	Group *explain.FileGroup `json:"file_group,omitempty"`
	Blame *explain.Blame     `json:"blame,omitempty"`
	// Summary is the verdict in one sentence, worded by output.
	Summary string `json:"summary"`
}

// Options narrow and shape the analysis.
type Options struct {
	Filter    source.Filter
	LabelGlob string // only labels matching this glob
	KeepQuery bool   // keep the query string of HTTP paths
	Explained int    // how many of the slowest get files and blame (the rest: verdicts only)
}

type connKey struct {
	pid uint32
	dev uint32
	ino uint64
	gen uint32
}

// socketCall is one streamed syscall on a socket of the target.
type socketCall struct {
	conn        connKey
	tid         uint32
	comm        string
	ts, dur     uint64
	name, class string
	ret         int64
	blocked     bool
	peer, local string
}

// ErrNoSocketCalls is a recording made without the socket calls requests
// are cut from: a user's choice of analysis, not a damaged file.
var ErrNoSocketCalls = errors.New("this recording has no socket calls to cut requests from: record with --requests (or --full)")

// Find cuts the target's connections into requests by their
// protocol (requests_cut.go, internal/analysis/protocol): by message for
// PostgreSQL, MySQL and Redis, and for the rest, on a connection a server
// accepted (or first read from), a request begins when bytes arrive after
// the server's previous answer and ends with the last bytes it wrote before
// reading the next one or closing.
func Find(src *explain.Source, opts Options) (*Requests, error) {
	held, release, err := src.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	s := recording{held}
	out := &Requests{Schema: "whyslow.requests/v1", Lost: s.Lost, Payload: s.Meta["payload_bytes"] != "" && s.Meta["payload_bytes"] != "0"}
	for src, n := range s.Lost {
		if src != event.LostRebuilt { // its waits were rebuilt: nothing is missing
			out.LostEvents += n
		}
	}
	if s.Meta["requests"] != "true" && !s.Full() {
		return nil, ErrNoSocketCalls
	}
	pids, err := s.requestPIDs(opts.Filter)
	if err != nil {
		return nil, err
	}
	if len(pids) == 0 {
		return out.finish(opts), nil
	}
	calls, reqs, err := s.cutConnections(pids, opts.KeepQuery)
	if err != nil {
		return nil, err
	}
	reqs = selected(reqs, opts)
	if out.Approximate, err = s.walkPaths(pids, calls, reqs); err != nil {
		return nil, err
	}
	sharedThreads(reqs)
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].server() > reqs[j].server() })
	for i, r := range reqs {
		r.describe(s)
		if i < opts.Explained {
			if err := r.explain(s, pids); err != nil {
				return nil, err
			}
		}
		out.Requests = append(out.Requests, r.Entry)
	}
	return out.finish(opts), nil
}

// cutConnections reads the socket calls of pids and cuts them into
// requests (requests_cut.go), their arrivals placed; the server's wake-ups
// of its own workers are dropped, and a request passed on to an upstream is
// nested into the front's.
func (s recording) cutConnections(pids []uint32, keepQuery bool) ([]socketCall, []*request, error) {
	calls, err := s.socketCalls(pids)
	if err != nil {
		return nil, nil, err
	}
	starts, err := s.requestStarts(pids, keepQuery)
	if err != nil {
		return nil, nil, err
	}
	everyRead := s.Meta["payload_read_bytes"] != "" && s.Meta["payload_read_bytes"] != "0"
	reqs, clients := frameRequests(calls, starts, everyRead)
	placeArrivals(reqs, starts, s.Meta["arrivals"] == event.ArrivalsPerConnection)
	// The server waking its own workers is no client's request.
	if reqs, err = s.dropWakeups(calls, clients, reqs); err != nil {
		return nil, nil, err
	}
	// A request passed on to an upstream is the front's: counted there once.
	if reqs, err = s.nestUpstreams(calls, clients, reqs); err != nil {
		return nil, nil, err
	}
	return calls, reqs, nil
}

// selected are the requests the options keep: by window, label, latency
// and answering thread.
func selected(reqs []*request, opts Options) []*request {
	kept := reqs[:0]
	for _, r := range reqs {
		d := time.Duration(r.end - r.begin)
		switch {
		case opts.Filter.Begin != 0 && r.end < opts.Filter.Begin, opts.Filter.End != 0 && r.begin > opts.Filter.End:
		case opts.Filter.Min > 0 && d < opts.Filter.Min, opts.Filter.Max > 0 && d > opts.Filter.Max:
		case opts.LabelGlob != "" && !globMatch(opts.LabelGlob, r.Label):
		case len(opts.Filter.TIDs) > 0 && !slices.Contains(opts.Filter.TIDs, r.TID):
		default:
			kept = append(kept, r)
		}
	}
	return kept
}

// walkPaths walks the critical path of each request, from the thread that
// answered back to the first byte read, and says whether any was
// approximate (served by a thread serving other connections meanwhile).
func (s recording) walkPaths(pids []uint32, calls []socketCall, reqs []*request) (approximate bool, err error) {
	win := s.Window()
	if err := s.TargetWaits(pids, win); err != nil {
		return false, err
	}
	w, err := critpath.Load(s.Source.Source, win)
	if err != nil {
		return false, err
	}
	loops := eventLoopsOf(calls, reqs)
	served := servedBy(reqs)
	for _, r := range reqs {
		served.cur = r.conn
		r.path = w.Request(critpath.Request{PID: r.conn.pid, TID: r.TID, Comm: r.Comm, Begin: r.begin, End: r.end}, served)
		r.Approximate = loops.servedOthers(r)
		approximate = approximate || r.Approximate
	}
	return approximate, nil
}

// request is a request being cut, with what the cutting needs.
type request struct {
	Entry
	firstRead uint64 // entry time of the read that brought its first bytes
	read      uint64 // and its return: begin, unless the bytes' arrival is known
	answered  bool
	hops      []hop // its conversations on connections it opened (upstreams)
}

// Path is the request's critical path; its segments' BeginS count from the
// request's begin.
func (r *Entry) Path() explain.CriticalPath { return r.path }

// Mono is the request's time in the recording's clock (CLOCK_MONOTONIC ns):
// what Begin and DurationS are, before their conversion.
func (r *Entry) Mono() (begin, end uint64) { return r.begin, r.end }

func (r *request) server() float64 { return float64(r.end-r.begin)/1e9 - r.ClientWaitS }

// servedRequests is the requests each thread answered, by their begin, and
// the connection of the request being walked: a lock held by a thread while
// it served another connection's request is that session's
// (critpath.Served).
type servedRequests struct {
	by  map[uint32][]*request
	cur connKey
}

func servedBy(reqs []*request) *servedRequests {
	s := &servedRequests{by: map[uint32][]*request{}}
	for _, r := range reqs {
		s.by[r.TID] = append(s.by[r.TID], r)
	}
	for _, list := range s.by { // arrivals can move a begin before the last one's
		sort.Slice(list, func(i, j int) bool { return list[i].begin < list[j].begin })
	}
	return s
}

// Another says whether thread tid served a request of another connection
// than the one walked during [a, b].
func (s *servedRequests) Another(tid uint32, a, b uint64) bool {
	for _, r := range s.by[tid] {
		if r.begin >= b {
			break
		}
		if r.end > a && r.conn != s.cur {
			return true
		}
	}
	return false
}
