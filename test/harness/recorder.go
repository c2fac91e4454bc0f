package harness

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Output is a command's stderr as it comes, safe to read while it runs. It
// closes recording at whyslow's line saying it records.
type Output struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	said      bool // the line came
	recording chan struct{}
}

const announced = "whyslow: recording "

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if !o.said && strings.Contains(o.buf.String(), announced) {
		o.said = true
		close(o.recording)
	}
	return len(p), nil
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// StartRecorder starts whyslow (record or attach, without a command) and
// returns once it says it is recording: what starts after is seen. Its
// stderr goes on into the returned Output. A recorder still running at the
// test's end is killed.
func StartRecorder(t testing.TB, cmd *exec.Cmd) *Output {
	t.Helper()
	out := &Output{recording: make(chan struct{})}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		// Only to notice an early exit (a zombie, until the test's Wait).
		for {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
			if i := bytes.LastIndexByte(stat, ')'); err != nil || i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				close(exited)
				return
			}
			select {
			case <-out.recording:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	select {
	case <-out.recording:
		return out
	case <-exited:
		t.Fatalf("%v ended before recording: %s", cmd.Args, out)
	case <-time.After(60 * time.Second):
		t.Fatalf("%v: not recording after 60 s: %s", cmd.Args, out)
	}
	return nil
}

// StopRecorder ends a recording started with StartRecorder once what it
// was started for is done: SIGINT (as Ctrl-C), after settle for the last
// events (an exit, a block completion) to land, instead of waiting out its
// -d. It fails the test if the recorder did not end well.
func StopRecorder(t testing.TB, cmd *exec.Cmd, out *Output, settle time.Duration) {
	t.Helper()
	time.Sleep(settle)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("stopping %v: %v", cmd.Args, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}
