package output

import (
	"io"

	"github.com/whyslow/whyslow/internal/analysis/explain"
	"github.com/whyslow/whyslow/internal/analysis/requests"
)

// The analyses' JSON carries each sentence in a summary field beside the
// facts it words (docs/run-json.md, docs/requests-json.md). Analyses leave
// those fields empty; these fill them with the sentences the terminal shows.

// FillSummaries words x's verdict, file groups and blame into their Summary
// fields.
func FillSummaries(x *explain.Explanation) {
	x.Verdict.Summary = verdictSentence(x.Verdict)
	if d := x.Verdict.Detail; d != nil {
		fillGroup(d.Group)
		fillBlame(d.Blame)
		if d.Kernel != nil {
			fillGroup(d.Kernel.Group)
		}
	}
	for i := range x.FileGroups {
		fillGroup(&x.FileGroups[i])
	}
	for i := range x.Blame {
		fillBlame(&x.Blame[i])
	}
}

// FillRequestSummaries words each request's verdict and blame into their
// Summary fields.
func FillRequestSummaries(r *requests.Requests) {
	for i := range r.Requests {
		q := &r.Requests[i]
		q.Verdict.Summary = requestVerdictSentence(q.Verdict)
		fillGroup(q.Verdict.Group)
		fillBlame(q.Verdict.Blame)
		for j := range q.Blame {
			fillBlame(&q.Blame[j])
		}
	}
}

func fillGroup(g *explain.FileGroup) {
	if g != nil {
		g.Summary = groupSentence(*g)
	}
}

func fillBlame(b *explain.Blame) {
	if b != nil {
		b.Summary = blameSentence(*b)
	}
}

// ExplanationJSON writes x as whyslow.run/v1, its sentences filled in.
func ExplanationJSON(w io.Writer, x *explain.Explanation) error {
	FillSummaries(x)
	return JSON(w, x)
}

// RequestsJSON writes r as whyslow.requests/v1, its sentences filled in.
func RequestsJSON(w io.Writer, r *requests.Requests) error {
	FillRequestSummaries(r)
	return JSON(w, r)
}
