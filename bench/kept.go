package main

import "strings"

// A section of BENCHMARKS.md measured by hand, not by this driver, is
// marked so, and each run of the driver carries it over as it was:
//
//	<!-- kept: long runs -->
//	## Long runs ...
//	<!-- /kept -->
const (
	keptOpen  = "<!-- kept: "
	keptClose = "<!-- /kept -->"
)

// keptBlocks returns the kept sections of a BENCHMARKS.md, markers
// included, each ending in a blank line, in their order.
func keptBlocks(md string) []string {
	var out []string
	for {
		i := strings.Index(md, keptOpen)
		if i < 0 {
			return out
		}
		md = md[i:]
		j := strings.Index(md, keptClose)
		if j < 0 {
			return out // cut short: not carried
		}
		out = append(out, md[:j+len(keptClose)]+"\n\n")
		md = md[j+len(keptClose):]
	}
}
