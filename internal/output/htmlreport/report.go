// Package htmlreport writes the explanation of a recording as one HTML file
// that works offline: the verdict and evidence of explain, a per-thread
// timeline with the critical path, reason shares, devices and the page cache
// over time, requests, and an off-CPU flame graph. The charts are Apache
// ECharts, embedded; every string from the recording is escaped by
// html/template (text) or given to the page as JSON (charts).
package htmlreport

import (
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/output"
)

var (
	//go:embed assets/echarts.min.js
	echartsJS string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.html.tmpl
	pageTemplate string
)

// Report is everything the page shows.
type Report struct {
	Recording   string
	Meta        map[string]string
	Explanation *explain.Explanation
	Timeline    *explain.Timeline
	Series      *reports.Series
	Stacks      []reports.Stack
	// Requests, when the recording has them; RequestsNote says why not.
	Requests     *requests.Requests
	RequestsNote string
	// ExplainedRequests: how many of the slowest requests were explained
	// (files, blame): each gets its own section the scatter links to.
	ExplainedRequests int
	// WindowStartWallNS is the wall time of the timeline's zero.
	WindowStartWallNS int64
}

// page is parsed when first written, not at every start of whyslow (~0.4 ms).
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"secs":  format.Seconds,
		"bytes": format.Bytes,
		"pct":   format.Pct,
		"upper": strings.ToUpper,
		"color": func(r string) template.CSS {
			if c, ok := output.ReasonColors[r]; ok {
				return template.CSS(c)
			}
			return "#999"
		},
		"ms":    func(s float64) string { return fmt.Sprintf("%.1f ms", s) },
		"mib":   func(bps float64) string { return fmt.Sprintf("%.2f", bps/(1<<20)) },
		"chain": output.PathChain,
		"add1":  func(i int) int { return i + 1 },
		// Names come from the traced programs: control and bidi characters
		// shown escaped, as the terminal output shows them (a U+202E reversed
		// a thread's name; ESC and BEL reached the title).
		"safe": format.Safe,
		// A recording that holds requests is a server's: the page leads with
		// them, not with the verdict on its master's time.
		"requestsFirst": func(v view) bool { return v.Requests != nil && v.Requests.Count > 0 },
		"deref": func(f *float64) float64 {
			if f == nil {
				return 0
			}
			return *f
		},
	}).Parse(pageTemplate))
})

// view is what the template sees.
type view struct {
	*Report
	Command string
	Start   string
	Reasons []string
	Data    any
	ECharts template.JS
	JS      template.JS
	CSS     template.CSS
	// Nonce lets the page's own scripts run, and no other: its
	// Content-Security-Policy allows scripts with it only (not
	// 'unsafe-inline'), so markup that reached the page from a recording
	// could not run a script even if it escaped the escaping.
	Nonce string
}

// Write renders the report. It fills the sentences (summary fields) of the
// explanation and the requests first: the page shows the terminal's words.
func Write(w io.Writer, r *Report) error {
	output.FillSummaries(r.Explanation)
	if r.Requests != nil {
		output.FillRequestSummaries(r.Requests)
	}
	// URL-safe base64: the standard alphabet's '+' reached the page as
	// "&#43;" (html/template escapes it in attributes), a nonce the
	// browser decodes alike but no reader of the page expects.
	nonce := make([]byte, 18)
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	v := view{Report: r, Command: r.Explanation.Target.Command, ECharts: template.JS(echartsJS),
		JS: template.JS(reportJS), CSS: template.CSS(reportCSS), Nonce: base64.RawURLEncoding.EncodeToString(nonce)}
	if v.Command == "" {
		v.Command = fmt.Sprintf("pid %d", r.Explanation.Target.PID)
	}
	if r.WindowStartWallNS != 0 {
		v.Start = time.Unix(0, r.WindowStartWallNS).UTC().Format("2006-01-02 15:04:05.000 UTC")
	}
	for _, reason := range event.Reasons {
		v.Reasons = append(v.Reasons, string(reason))
	}
	v.Data = r.chartData()
	if err := page().Execute(w, v); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
}

// chartData is the JSON the page's script draws from.
func (r *Report) chartData() map[string]any {
	if r.Timeline != nil {
		for i := range r.Timeline.Threads {
			r.Timeline.Threads[i].Comm = format.Safe(r.Timeline.Threads[i].Comm)
		}
	}
	d := map[string]any{
		"colors":   output.ReasonColors,
		"ranked":   r.Explanation.Verdict.Ranked,
		"timeline": r.Timeline,
		"path":     pathBars(r.Explanation.Path.Segments),
		"series":   r.Series,
		"flame":    Flame(r.Stacks),
	}
	if r.Timeline != nil && r.Series != nil {
		d["series_offset_s"] = (float64(r.Series.StartMono) - float64(r.Timeline.StartMono)) / 1e9
	}
	if r.Requests != nil {
		type point struct {
			At      float64 `json:"t"`
			MS      float64 `json:"ms"`
			Label   string  `json:"label"`
			Reason  string  `json:"reason"`
			Anchor  string  `json:"anchor,omitempty"`
			TID     uint32  `json:"tid"`
			Summary string  `json:"summary"`
		}
		points := []point{}
		for i, q := range r.Requests.Requests {
			at, err := time.Parse(time.RFC3339Nano, q.Begin)
			if err != nil {
				continue
			}
			p := point{At: float64(at.UnixNano()-r.WindowStartWallNS) / 1e9, MS: q.DurationS * 1e3, Label: format.Safe(q.Label),
				Reason: q.Verdict.Reason, TID: q.TID, Summary: q.Verdict.Summary}
			if i < r.ExplainedRequests {
				p.Anchor = fmt.Sprintf("request-%d", i+1)
			}
			points = append(points, p)
		}
		d["requests"] = points
	}
	return d
}

// pathBar is a stretch of the critical path in one thread: its segments
// joined, with the reason that took most of it and what that waited on.
type pathBar struct {
	TID    uint32  `json:"tid"`
	BeginS float64 `json:"begin_s"`
	DurS   float64 `json:"dur_s"`
	Reason string  `json:"reason"`
	Object string  `json:"object,omitempty"`
	By     string  `json:"blocked_by,omitempty"`
	top    float64
}

// pathBars joins consecutive segments of one thread: a path of thousands of
// short segments would make the page heavy and the bars too thin to see.
func pathBars(segs []explain.PathSegment) []pathBar {
	bars := []pathBar{}
	for _, s := range segs {
		if n := len(bars); n > 0 && bars[n-1].TID == s.TID && s.BeginS <= bars[n-1].BeginS+bars[n-1].DurS+1e-6 {
			b := &bars[n-1]
			b.DurS = s.BeginS + s.DurS - b.BeginS
			if s.DurS > b.top {
				b.top, b.Reason, b.Object = s.DurS, s.Reason, s.Object
			}
			continue
		}
		b := pathBar{TID: s.TID, BeginS: s.BeginS, DurS: s.DurS, Reason: s.Reason, Object: s.Object, top: s.DurS}
		if s.BlockedByPID != 0 {
			b.By = fmt.Sprintf("%s (pid %d)", s.BlockedByComm, s.BlockedByPID)
		}
		bars = append(bars, b)
	}
	return bars
}
