// Package output renders analyses for people (aligned text, bars, human
// units, 80 columns) and machines (JSON). Every string that came from a
// traced program goes through format.Safe before it reaches a terminal.
package output
