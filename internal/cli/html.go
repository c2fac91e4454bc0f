package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/output/htmlreport"
)

// htmlThreads is how many threads the timeline shows; htmlRequests how many
// of the slowest requests are explained.
const htmlThreads, htmlRequests = 24, 10

func newHTMLReport() *cobra.Command {
	var pid uint
	var out string
	cmd := &cobra.Command{
		Use:   "html FILE -o REPORT.html [--pid PID]",
		Short: "One self-contained HTML page: verdict, timeline, devices, requests, flame graph",
		Long: `Writes the explanation of a recording as one HTML file that works offline
(scripts and styles inside it, nothing loaded from the network): the verdict
and evidence of explain, a per-thread timeline coloured by reason with the
critical path marked, the reasons' shares, devices and the page cache over
time, the requests (when recorded with --requests) with their latency over
time linked to the slowest ones' explanations, and an off-CPU flame graph by
reason. Open it in any browser. Details: docs/html-report.md.`,
		Example: `  whyslow report html rec.db -o rec.html`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr("report html needs -o REPORT.html")
			}
			return htmlTo(args[0], uint32(pid), out)
		},
	}
	cmd.Flags().UintVar(&pid, "pid", 0, "the process to explain (default: the recording's target)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to create (never overwritten)")
	return cmd
}

// htmlTo writes the HTML report of the recording at path; pid 0 is the
// recording's target.
func htmlTo(path string, pid uint32, out string) error {
	src, done, err := openSource(path)
	if err != nil {
		return err
	}
	defer done()
	return htmlFrom(src, path, pid, nil, out)
}

// htmlFrom writes the HTML report of an open recording; x is the target's
// explanation when the caller has it already (run --html), else nil.
func htmlFrom(src *explain.Source, path string, pid uint32, x *explain.Explanation, out string) error {
	if pid == 0 {
		p, _ := strconv.Atoi(src.Meta["target_pid"])
		if p <= 0 {
			return usageErr("this recording has no target process: give --pid")
		}
		pid = uint32(p)
	} else if err := holdsProcess(src, pid); err != nil {
		return err
	}
	r, err := htmlReport(src, path, pid, x)
	if err != nil {
		return err
	}
	w, commit, abort, err := createOutput(out, os.Stdout)
	if err != nil {
		return err
	}
	if err := htmlreport.Write(w, r); err != nil {
		abort()
		return err
	}
	return commit()
}

func htmlReport(src *explain.Source, path string, pid uint32, x *explain.Explanation) (*htmlreport.Report, error) {
	var err error
	if x == nil {
		if x, err = explain.Explain(src, pid); err != nil {
			return nil, fmt.Errorf("explaining: %w", err)
		}
	}
	r := &htmlreport.Report{Recording: path, Meta: src.Meta, Explanation: x}
	if r.Timeline, err = explain.ThreadTimeline(src, x, htmlThreads); err != nil {
		return nil, err
	}
	r.WindowStartWallNS = src.Clock.Wall(r.Timeline.StartMono).UnixNano()
	buckets := int(min(max((src.Clock.EndMono-src.Clock.StartMono)/50_000_000, 20), 2000))
	if r.Series, err = reports.TimeSeries(src.Source, buckets); err != nil {
		return nil, err
	}
	if r.Stacks, err = reports.Stacks(src.Source, reports.StackOptions{OffCPU: true}); err != nil {
		return nil, err
	}
	if src.Meta["requests"] == "true" || src.Full() {
		f := source.NoFilter()
		f.Limit = htmlRequests
		if r.Requests, err = requests.Find(src, (&requestFlags{}).options(f)); err != nil {
			return nil, err
		}
		r.ExplainedRequests = htmlRequests
	}
	return r, nil
}
