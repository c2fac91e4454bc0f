package requests

import (
	"database/sql"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/protocol"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/event"
)

// requestPIDs is the recording's target tree, or every process with socket
// calls in a system-wide recording; narrowed by --pid and --comm.
func (s recording) requestPIDs(f source.Filter) ([]uint32, error) {
	var pids []uint32
	if p, _ := strconv.Atoi(s.Meta["target_pid"]); p > 0 {
		var err error
		if pids, err = s.TargetSet(uint32(p)); err != nil {
			return nil, err
		}
	} else {
		rows, err := s.Query("SELECT DISTINCT pid FROM syscalls WHERE fkind IN ('socket','unix') ORDER BY pid")
		if err != nil {
			return nil, fmt.Errorf("finding servers: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var p uint32
			if rows.Scan(&p) == nil {
				pids = append(pids, p)
			}
		}
	}
	if len(f.PIDs) == 0 && len(f.Comms) == 0 {
		return pids, nil
	}
	var kept []uint32
	for _, p := range pids {
		if (len(f.PIDs) == 0 || slices.Contains(f.PIDs, p)) && (len(f.Comms) == 0 || slices.Contains(f.Comms, s.CommOf(p))) {
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// socketCalls reads the target's calls on connected sockets, per connection
// in time order.
func (s recording) socketCalls(pids []uint32) ([]socketCall, error) {
	rows, err := s.Query(sqlOf("requests_socket_calls"), sql.Named("pids", pids))
	if err != nil {
		return nil, fmt.Errorf("reading socket calls: %w", err)
	}
	defer rows.Close()
	var out []socketCall
	for rows.Next() {
		var c socketCall
		if err := rows.Scan(&c.conn.pid, &c.conn.dev, &c.conn.ino, &c.conn.gen, &c.tid, &c.comm, &c.ts, &c.dur,
			&c.name, &c.class, &c.ret, &c.blocked, &c.peer, &c.local); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

type labelKey struct {
	conn connKey
	ts   uint64
}

// firstBytes is what the kernel told of a read's first bytes: its label,
// when they reached the socket (TCP; 0 unknown), and, on a connection whose
// protocol frames by message, the bytes themselves.
type firstBytes struct {
	label       string
	protocol    string // whose Label named it (protocol.LabelOf)
	arrived     uint64
	traceParent string
	data        []byte
}

// requestStarts reads the first bytes of each read (each request's first,
// in older recordings), by connection and the entry time of the read.
func (s recording) requestStarts(pids []uint32, keepQuery bool) (map[labelKey]firstBytes, error) {
	out := map[labelKey]firstBytes{}
	rows, err := s.Query(sqlOf("requests_first_bytes"), sql.Named("pids", pids))
	if err != nil {
		return nil, fmt.Errorf("reading request labels: %w", err)
	}
	defer rows.Close()
	// A connection's bytes are kept when its protocol frames by message,
	// known by its first reads (protocol.Detect): until then, kept.
	var (
		conn            connKey
		start           []byte
		undecided       []labelKey
		decided, framed bool
	)
	for rows.Next() {
		var k labelKey
		var f firstBytes
		if err := rows.Scan(&k.conn.pid, &k.conn.dev, &k.conn.ino, &k.conn.gen, &k.ts, &f.data, &f.arrived); err != nil {
			return nil, err
		}
		if k.conn != conn {
			conn, start, undecided, decided, framed = k.conn, nil, nil, false, false
		}
		f.label, f.protocol = protocol.LabelOf(f.data, keepQuery)
		f.traceParent = protocol.TraceParent(f.data)
		if decided && !framed {
			f.data = nil
		}
		out[k] = f
		if decided {
			continue
		}
		start, undecided = append(start, f.data...), append(undecided, k)
		if len(undecided) < protocol.StartReads && len(start) < protocol.StartBytes {
			continue
		}
		p := protocol.Detect(start)
		decided, framed = true, p != nil && p.NewFramer != nil
		for _, u := range undecided {
			if g := out[u]; !framed {
				g.data = nil
				out[u] = g
			}
		}
	}
	return out, rows.Err()
}

// placeArrivals labels requests (in time order) and makes each begin at its
// bytes' arrival where that is known to be its own. Where arrivals were not
// matched to their connection (an older recording), a connection's first
// request begins at its read: its socket's address may have been another
// connection's, whose bytes' arrival it kept.
func placeArrivals(reqs []*request, starts map[labelKey]firstBytes, perConnection bool) {
	prevEnd := map[connKey]uint64{}
	for _, r := range reqs {
		f := starts[labelKey{r.conn, r.firstRead}]
		if r.Label == "" { // not labelled by its protocol's framer
			r.Label, r.Protocol = f.label, f.protocol
		}
		r.TraceParent = f.traceParent
		if r.Label == "" {
			r.Label = "(no request line)"
		}
		if end, later := prevEnd[r.conn]; later || perConnection {
			r.fromArrival(f.arrived, end)
		}
		prevEnd[r.conn] = r.end
	}
}

// fromArrival makes a request begin when its first bytes reached the socket
// rather than when the server read them: the client waited from there. The
// difference is QueuedS. An arrival after the read (bytes that came later)
// or before the connection's previous request ended is none of this
// request's.
func (r *request) fromArrival(arrived, prevEnd uint64) {
	if arrived == 0 || arrived >= r.begin || arrived < prevEnd {
		return
	}
	r.QueuedS = float64(r.begin-arrived) / 1e9
	r.begin = arrived
}

// eventLoops knows, per thread, its calls on connections it served, and
// when: a request whose thread served another connection meanwhile shares the
// thread's waits with it. (Connections it opened as a client, to a database
// or a name service, are part of serving the request.)
type eventLoops map[uint32][]socketCall

func eventLoopsOf(calls []socketCall, reqs []*request) eventLoops {
	served := map[connKey]bool{}
	for _, r := range reqs {
		served[r.conn] = true
	}
	byTID := eventLoops{}
	for _, c := range calls {
		if served[c.conn] {
			byTID[c.tid] = append(byTID[c.tid], c)
		}
	}
	for _, cs := range byTID {
		sort.Slice(cs, func(i, j int) bool { return cs[i].ts < cs[j].ts })
	}
	return byTID
}

// SharedRequest is another request a thread served in one's time.
type SharedRequest struct {
	Label     string  `json:"label"`
	Begin     string  `json:"begin"`
	DurationS float64 `json:"duration_s"`

	begin uint64
}

// sharedThreads names, for each approximate request, the requests its
// thread served meanwhile: an event loop's time in GET /save's fsync is
// what the queued GET /fast waited on.
func sharedThreads(reqs []*request) {
	byTID := map[uint32][]*request{}
	for _, r := range reqs {
		byTID[r.TID] = append(byTID[r.TID], r)
	}
	for _, r := range reqs {
		if !r.Approximate {
			continue
		}
		var others []*request
		for _, o := range byTID[r.TID] {
			if o != r && o.begin < r.end && o.end > r.begin {
				others = append(others, o)
			}
		}
		sort.Slice(others, func(i, j int) bool { return others[i].end-others[i].begin > others[j].end-others[j].begin })
		for _, o := range others[:min(3, len(others))] {
			r.SharedWith = append(r.SharedWith, SharedRequest{Label: o.Label, DurationS: float64(o.end-o.begin) / 1e9, begin: o.begin})
		}
	}
}

func (l eventLoops) servedOthers(r *request) bool {
	cs := l[r.TID]
	i := sort.Search(len(cs), func(i int) bool { return cs[i].ts >= r.begin })
	for ; i < len(cs) && cs[i].ts < r.end; i++ {
		if cs[i].conn != r.conn {
			return true
		}
	}
	return false
}

// describe fills what every request gets: times, its verdict from its path.
func (r *request) describe(s recording) {
	r.Begin = s.Clock.Wall(r.begin).UTC().Format(time.RFC3339Nano)
	for i := range r.SharedWith {
		r.SharedWith[i].Begin = s.Clock.Wall(r.SharedWith[i].begin).UTC().Format(time.RFC3339Nano)
	}
	r.DurationS = float64(r.end-r.begin) / 1e9
	r.ByReason = r.path.ByReason
	// A millisecond either side, in the local clock time --timerange reads.
	const clock = "15:04:05.000"
	r.Timerange = fmt.Sprintf("[%s,%s]", s.Clock.Wall(r.begin-min(r.begin, 1e6)).Format(clock), s.Clock.Wall(r.end+1e6).Format(clock))
	var busy float64
	for reason, v := range r.ByReason {
		if reason != string(event.ReasonIdle) {
			busy += v
		}
	}
	top, topS := "", 0.0
	for reason, v := range r.ByReason {
		if reason != string(event.ReasonIdle) && (v > topS || v == topS && reason < top) {
			top, topS = reason, v
		}
	}
	if top == "" {
		r.Verdict = Verdict{Kind: explain.VerdictNone, Reason: "unknown"}
		return
	}
	r.Verdict = Verdict{Kind: explain.VerdictTop, Reason: top, Share: topS / max(busy, 1e-9)}
	r.Verdict.Object, r.Verdict.HeldUpBy = explain.PathObject(r.path, top)
}

// explain adds the files the request's path used in its window, and blame:
// who else made it wait.
func (r *request) explain(s recording, pids []uint32) error {
	tids := map[uint32]bool{r.TID: true}
	// The processes its path went through (an upstream worker) wait on
	// storage for it too: blame looks at their waits as the target's.
	onPath := slices.Clone(pids)
	for _, seg := range r.path.Segments {
		tids[seg.TID] = true
		if !slices.Contains(onPath, seg.PID) {
			onPath = append(onPath, seg.PID)
		}
	}
	slices.Sort(onPath)
	var list []uint32
	for t := range tids {
		list = append(list, t)
	}
	sort.Slice(list, func(i, j int) bool { return list[i] < list[j] })
	rows, err := s.Query(sqlOf("requests_files"), sql.Named("b", r.begin), sql.Named("e", r.end), sql.Named("tids", list))
	if err != nil {
		return fmt.Errorf("finding a request's files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f explain.FileUse
		var rb, wb, ops, wait sql.NullFloat64
		if err := rows.Scan(&f.Path, &rb, &wb, &ops, &wait); err != nil {
			return err
		}
		f.ReadBytes, f.WriteBytes, f.Ops, f.WaitS = uint64(rb.Float64), uint64(wb.Float64), uint64(ops.Float64), wait.Float64/1e9
		r.Files = append(r.Files, f)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if groups := explain.GroupFiles(r.Files); len(groups) > 0 && groups[0].Files >= 10 {
		r.Verdict.Group = &groups[0]
	}
	if len(r.Files) > 10 {
		r.Files = r.Files[:10]
	}
	if r.Blame, err = explain.BlameOf(s.Source, r.path, r.DurationS, onPath, list, source.Window{Begin: r.begin, End: r.end}); err != nil {
		return err
	}
	storage := event.Reason(r.Verdict.Reason).Disk()
	for _, b := range r.Blame {
		// Only blame that explains the verdict: storage waits' culprits for
		// a storage verdict, a lock holder for a lock wait.
		if b.Share >= 0.25 && (storage && b.Activity.Storage() || string(b.Activity) == r.Verdict.Reason) {
			r.Verdict.Blame = &b
			break
		}
	}
	return nil
}

// finish computes the summary and keeps the slowest opts.Filter.Limit requests.
func (out *Requests) finish(opts Options) *Requests {
	out.Count = len(out.Requests)
	var all []float64
	byLabel := map[string][]Entry{}
	for _, r := range out.Requests {
		all = append(all, r.DurationS)
		byLabel[r.Label] = append(byLabel[r.Label], r)
	}
	out.LatencyS = quantiles(all)
	for label, rs := range byLabel {
		var d []float64
		verdicts := map[string]int{}
		for _, r := range rs {
			d = append(d, r.DurationS)
			verdicts[r.Verdict.Reason]++
		}
		q := quantiles(d)
		typical := ""
		for v, n := range verdicts {
			if n > verdicts[typical] || n == verdicts[typical] && v < typical {
				typical = v
			}
		}
		out.ByLabel = append(out.ByLabel, LabelStats{Label: label, Count: len(rs), P50S: q.P50, P99S: q.P99, MaxS: q.Max, Verdict: typical})
	}
	sort.Slice(out.ByLabel, func(i, j int) bool {
		a, b := out.ByLabel[i], out.ByLabel[j]
		return a.MaxS > b.MaxS || a.MaxS == b.MaxS && a.Label < b.Label
	})
	if opts.Filter.Limit > 0 && len(out.Requests) > opts.Filter.Limit {
		out.Requests = out.Requests[:opts.Filter.Limit]
	}
	return out
}

// quantiles of durations, nearest rank.
func quantiles(d []float64) Quantiles {
	if len(d) == 0 {
		return Quantiles{}
	}
	s := append([]float64(nil), d...)
	sort.Float64s(s)
	at := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return Quantiles{P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: s[len(s)-1]}
}

func globMatch(glob, s string) bool {
	ok, err := path.Match(glob, s)
	return err == nil && ok
}
