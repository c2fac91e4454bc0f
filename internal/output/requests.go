package output

import (
	"fmt"
	"io"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/format"
)

// Requests prints a server's requests: the summary, by label, then the
// slowest with their explanation and the range to zoom into with report log.
// rec names the recording in the zoom commands ("REC" when empty).
func Requests(w io.Writer, r *requests.Requests, rec string) {
	if rec == "" {
		rec = "REC"
	}
	fmt.Fprintf(w, "\nrequests: %d", r.Count)
	if r.Count > 0 {
		q := r.LatencyS
		fmt.Fprintf(w, "  p50 %s  p90 %s  p99 %s  max %s", format.Seconds(q.P50), format.Seconds(q.P90), format.Seconds(q.P99), format.Seconds(q.Max))
	}
	fmt.Fprintln(w)
	if !r.Payload {
		fmt.Fprintln(w, "(no request lines: recorded without the first bytes of requests; labels are peers)")
	}
	if r.Approximate {
		fmt.Fprintln(w, "(approximate: some threads served several connections at once, as an event loop does;")
		fmt.Fprintln(w, " their waits in a request's window are shared with the others)")
	}
	if len(r.ByLabel) > 0 {
		Heading(w, "By label")
		t := Table{Cols: []Column{{Title: "label", Max: 36}, {Title: "count", Right: true}, {Title: "p50", Right: true},
			{Title: "p99", Right: true}, {Title: "max", Right: true}, {Title: "mostly"}}}
		for i, l := range r.ByLabel {
			if i == 12 {
				break
			}
			t.Row(l.Label, l.Count, format.Seconds(l.P50S), format.Seconds(l.P99S), format.Seconds(l.MaxS), l.Verdict)
		}
		t.Write(w)
	}
	if len(r.Requests) == 0 {
		return
	}
	Heading(w, "Slowest requests")
	for _, q := range r.Requests {
		label := q.Label
		if label == "(no request line)" && q.Peer != "" {
			label = "from " + q.Peer
		}
		fmt.Fprintf(w, "%s  %s  %s (tid %d)  %s\n", format.Seconds(q.DurationS), format.Safe(TrimLeft(label, 40)),
			format.Safe(q.Comm), q.TID, q.Begin)
		if q.QueuedS > 0.0005 {
			fmt.Fprintf(w, "  of it %s queued: the request had arrived, the server had not read it yet\n", format.Seconds(q.QueuedS))
		}
		if q.ClientWaitS > 0.0005 {
			fmt.Fprintf(w, "  of it %s waiting for the client to send the rest\n", format.Seconds(q.ClientWaitS))
		}
		if u := q.Upstream; u != nil {
			fmt.Fprintf(w, "  of it %s in the upstream %s\n", format.Seconds(u.DurationS), upstreamName(u))
		}
		if q.Approximate {
			var others []string
			for _, o := range q.SharedWith {
				others = append(others, fmt.Sprintf("%s (%s)", format.Safe(TrimLeft(o.Label, 30)), format.Seconds(o.DurationS)))
			}
			for _, line := range wrap("approximate: its thread served other requests meanwhile, and shares their waits: "+strings.Join(others, ", "), 76) {
				fmt.Fprintf(w, "  %s\n", line)
			}
		}
		for _, line := range wrap(strings.ToUpper(q.Verdict.Reason)+": "+requestVerdictSentence(q.Verdict), 76) {
			fmt.Fprintf(w, "  %s\n", line)
		}
		fmt.Fprintf(w, "  zoom: whyslow report log %s --timerange %s --tid %d\n", format.Safe(rec), q.Timerange, q.TID)
	}
}

// upstreamName: "php-fpm8.2 (pid 7) on unix:/run/php/fpm.sock".
func upstreamName(u *requests.Upstream) string {
	var b strings.Builder
	if u.PID != 0 {
		fmt.Fprintf(&b, "%s (pid %d)", format.Safe(u.Comm), u.PID)
	}
	if u.Peer != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString("on " + format.Safe(u.Peer))
	}
	if b.Len() == 0 {
		return "server"
	}
	return b.String()
}
