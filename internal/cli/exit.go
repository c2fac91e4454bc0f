// Package cli holds whyslow's commands, one file each; flags bind to option
// structs, and every command returns an error that Main turns into one line
// on stderr and a documented exit code.
package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/target"
)

// Exit codes (docs/exit-codes.md; `whyslow --help` lists them).
const (
	ExitOK        = 0
	ExitError     = 1   // capture or analysis failed
	ExitUsage     = 2   // bad flags or arguments
	ExitBadFile   = 3   // not a whyslow recording, or unreadable
	ExitNoCapture = 4   // missing privilege or kernel feature: capture impossible or degraded
	ExitNotExec   = 126 // run: the command exists but cannot be executed
	ExitNotFound  = 127 // run: command not found
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func usageErr(format string, a ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, a...))
}

// childExit is a run/attach target's own exit code, passed through.
type childExit int

func (c childExit) Error() string { return fmt.Sprintf("exit %d", int(c)) }

// codeOf maps an error to its exit code.
func codeOf(err error) int {
	var ce childExit
	if errors.As(err, &ce) {
		return int(ce)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	switch {
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrBadPath):
		return ExitUsage
	case errors.Is(err, store.ErrNotRecording), errors.Is(err, store.ErrUnreadable), store.Damaged(err):
		return ExitBadFile
	case errors.Is(err, target.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, capture.ErrNotPermitted):
		return ExitNoCapture
	}
	return ExitError
}

// report prints an error as one line: no stack trace, nothing a traced
// program's name could inject.
func report(err error) {
	msg := err.Error()
	if os.Getenv(debugEnv) != "" {
		for _, line := range strings.Split(msg, "\n") { // whole: a verifier log, DuckDB's context
			fmt.Fprintf(os.Stderr, "whyslow: %s\n", format.Safe(line))
		}
		return
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i] // one line: the rest is a verifier log or SQL context
	}
	fmt.Fprintf(os.Stderr, "whyslow: %s\n", format.Safe(msg))
}
