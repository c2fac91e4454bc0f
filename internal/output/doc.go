// Package output renders analyses for people (aligned text, bars, human
// units, 80 columns) and machines (JSON). Analyses return facts; the
// sentences made of them (verdicts, blame, file groups) are worded here, in
// words.go, and the JSON's summary fields are filled with the same sentences
// (summaries.go). Every string that came from a traced program goes through
// format.Safe before it reaches a terminal.
package output
