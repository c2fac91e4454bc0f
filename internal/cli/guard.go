package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/whyslow/whyslow/internal/format"
)

// A recording from elsewhere is hostile input, and DuckDB trusts what passes
// its block checksums: a doctored file can crash it (SIGSEGV, abort) in the
// middle of a query, with a Go trace of hundreds of lines. So the commands
// that read a recording the user names run in a child whyslow; this one
// waits, and turns a crash into one line and exit 3, as a damaged file
// deserves. The cost is one more start of whyslow (docs/exit-codes.md).
const (
	guardEnv  = "WHYSLOW_GUARDED" // set in the child: it runs the command itself
	debugEnv  = "WHYSLOW_DEBUG"   // set by the user: a crash's whole trace is shown
	guardTemp = 3                 // the child's fd on which it names its temporary files
)

// readsRecording says whether args run a command that opens a recording
// given by the user: report, sql and export. run and attach analyse the
// recording they have just made themselves.
func readsRecording(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		return a == "report" || a == "sql" || a == "export"
	}
	return false
}

// runGuarded runs args in a child whyslow and returns the exit code to give.
func runGuarded(args []string) int {
	temps, tempsW, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "whyslow: %v\n", err)
		return ExitError
	}
	child := exec.Command("/proc/self/exe", args...)
	child.Args[0] = os.Args[0]
	child.Env = append(os.Environ(), guardEnv+"=1")
	child.Stdin, child.Stdout = os.Stdin, os.Stdout
	// The child's stderr is held until it ends: on a crash it is a trace,
	// not for the user. An analysis writes little there (an error, a note).
	var stderr cappedBuffer
	child.Stderr = &stderr
	child.ExtraFiles = []*os.File{tempsW}

	// Signals sent to this whyslow are the child's: it ends as it would
	// alone (Ctrl-C reaches both, and the second delivery changes nothing).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	if err := child.Start(); err != nil {
		tempsW.Close()
		temps.Close()
		fmt.Fprintf(os.Stderr, "whyslow: starting the reader: %v\n", err)
		return ExitError
	}
	tempsW.Close()
	tempPaths := readLines(temps)
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	var waitErr error
wait:
	for {
		select {
		case s := <-sigs:
			child.Process.Signal(s)
		case waitErr = <-done:
			break wait
		}
	}
	temps.Close()
	return guardedExit(child, waitErr, stderr.Bytes(), tempPaths(), args)
}

// readLines reads r's lines until it closes; the function it returns
// waits for that and gives them.
func readLines(r io.Reader) func() []string {
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}()
	return func() []string {
		<-done
		return lines
	}
}

// guardedExit gives the exit code of a child that ended: its own, with its
// stderr passed on, unless it crashed. Then what it began to write (the
// temporary files it named) is removed, and its trace becomes one line
// that names the damaged recording, exit ExitBadFile.
func guardedExit(child *exec.Cmd, waitErr error, stderr []byte, tempPaths, args []string) int {
	var exit *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exit) {
		fmt.Fprintf(os.Stderr, "whyslow: waiting for the reader: %v\n", waitErr)
		return ExitError
	}
	ws, _ := child.ProcessState.Sys().(syscall.WaitStatus)
	crash := crashOf(ws, stderr)
	if crash == "" {
		os.Stderr.Write(stderr)
		if ws.Signaled() {
			return 128 + int(ws.Signal()) // interrupted, or stdout closed: as the shell says
		}
		return ws.ExitStatus()
	}
	// Whatever the child began to write is not a result.
	for _, p := range tempPaths {
		os.RemoveAll(p)
	}
	if os.Getenv(debugEnv) != "" {
		os.Stderr.Write(stderr)
	}
	what := "a recording"
	if rec := recordingArg(args); rec != "" {
		what = rec
	}
	fmt.Fprintf(os.Stderr, "whyslow: %s: damaged: reading it crashed the reader (%s); %s=1 shows the trace\n",
		format.Safe(what), crash, debugEnv)
	return ExitBadFile
}

// crashOf names how a child crashed, or returns "" when it ended by itself
// or by a signal someone sent. Go turns a fault in DuckDB's C++ into a
// runtime trace and exit 2; a fault it cannot handle, or a second one, kills
// the child by the signal itself.
func crashOf(ws syscall.WaitStatus, stderr []byte) string {
	if ws.Signaled() {
		switch s := ws.Signal(); s {
		case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGABRT, syscall.SIGILL, syscall.SIGFPE, syscall.SIGTRAP, syscall.SIGSYS:
			return signalName(s)
		}
		return ""
	}
	if ws.ExitStatus() != 2 {
		return ""
	}
	for _, mark := range []string{"SIGSEGV", "SIGBUS", "SIGABRT", "SIGILL", "SIGFPE", "SIGTRAP", "SIGSYS"} {
		if bytes.Contains(stderr, []byte("\n"+mark+":")) || bytes.HasPrefix(stderr, []byte(mark+":")) ||
			bytes.Contains(stderr, []byte("[signal "+mark)) {
			return mark
		}
	}
	for _, mark := range []string{"panic: ", "fatal error: "} {
		if bytes.HasPrefix(stderr, []byte(mark)) || bytes.Contains(stderr, []byte("\n"+mark)) {
			return strings.TrimSuffix(mark, ": ")
		}
	}
	return ""
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGSEGV: "SIGSEGV", syscall.SIGBUS: "SIGBUS", syscall.SIGABRT: "SIGABRT",
		syscall.SIGILL: "SIGILL", syscall.SIGFPE: "SIGFPE", syscall.SIGTRAP: "SIGTRAP", syscall.SIGSYS: "SIGSYS"}
	return names[s]
}

// recordingArg is the first argument naming a DuckDB file: the recording.
func recordingArg(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if st, err := os.Stat(a); err == nil && st.Mode().IsRegular() && checkDuckMagic(a) {
			return a
		}
	}
	return ""
}

func checkDuckMagic(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 12)
	n, _ := io.ReadFull(f, head)
	return n == 12 && string(head[8:12]) == "DUCK"
}

// leftOnCrash tells the guarding whyslow about a temporary file or directory
// this one is writing, to remove should it crash before removing it itself.
func leftOnCrash(path string) {
	if f := guardFile(); f != nil {
		fmt.Fprintln(f, path) // unbuffered: said before the file is written
	}
}

// guardFile is the pipe to the guarding whyslow, opened once: an *os.File
// closes its descriptor when collected.
var guardFile = sync.OnceValue(func() *os.File {
	if os.Getenv(guardEnv) == "" {
		return nil
	}
	return os.NewFile(guardTemp, "guard")
})

// cappedBuffer keeps the first 1 MiB written: an error line, or the head
// of a trace.
type cappedBuffer struct{ bytes.Buffer }

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := 1<<20 - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
