package cli

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/output"
)

// requestFlags shape `report requests` (and attach --requests).
type requestFlags struct {
	label     string
	keepQuery bool
}

func (r *requestFlags) options(f source.Filter) requests.Options {
	return requests.Options{Filter: f, LabelGlob: r.label, KeepQuery: r.keepQuery, Explained: f.Limit}
}

func newRequestsReport() *cobra.Command {
	var rf requestFlags
	cmd := analysisCommand("requests", "Each request a server handled: found, labelled (HTTP request line) and explained, slowest first",
		func(c *cobra.Command) {
			c.Flags().StringVar(&rf.label, "label", "", "only requests whose label matches this glob ('GET /popularity/*')")
			c.Flags().BoolVar(&rf.keepQuery, "keep-query", false, "keep the query string of HTTP paths in labels")
			c.Example = `  whyslow attach -p $(pgrep -o nginx) --requests -d 30s -o rec.db
  whyslow report requests rec.db --min 500ms --limit 5
  whyslow report requests rec.db --label 'GET /popularity/*' --json`
			c.Long = `Cuts the target's connections into requests: a request begins when bytes
arrive after the server's previous answer (on TCP, when they reached the
machine: the time before the server read them is queued), and ends with the
last bytes it wrote back. A request a front server passed on to an upstream
(nginx to PHP-FPM, a proxy to an application server) is one request, counted
at the front, with the upstream named. Each is labelled by its HTTP request
line (when the recording took the first bytes of requests) and explained by
its own critical path: the threads and processes it waited on, its files, and
who else made it wait. Needs a recording made with --requests (or --full).
--min and --max filter by duration, --limit says how many of the slowest to
list and explain.`
		},
		func(w io.Writer, s *explain.Source, f source.Filter, ff *filterFlags, c *cobra.Command) error {
			r, err := requests.Find(s, rf.options(f))
			if errors.Is(err, requests.ErrNoSocketCalls) {
				return withCode(ExitUsage, err)
			}
			if err != nil {
				return err
			}
			if ff.json {
				return output.RequestsJSON(w, r)
			}
			output.Requests(w, r, c.Flags().Arg(0))
			return nil
		})
	return cmd
}

// requestsTo prints the requests of a finished attach to stderr, and JSON to a file.
func requestsTo(src *explain.Source, path, jsonPath string) error {
	f := source.NoFilter()
	f.Limit = 5
	r, err := requests.Find(src, (&requestFlags{}).options(f))
	if err != nil {
		return err
	}
	output.Requests(os.Stderr, r, path)
	if jsonPath == "" {
		return nil
	}
	out, err := os.Create(jsonPath)
	if err != nil {
		return err
	}
	defer out.Close()
	return output.RequestsJSON(out, r)
}
