package live

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmux drives a program in a detached tmux session on a private server
// socket, so the test shares nothing with anyone's tmux.
type tmux struct {
	socket, session string
	stderr          string // the program's stderr, in a file
}

func newTmux(t *testing.T, argv ...string) *tmux {
	t.Helper()
	tm := &tmux{socket: fmt.Sprintf("whyslow-test-%d", os.Getpid()), session: "top",
		stderr: filepath.Join(t.TempDir(), "stderr")}
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	shell := "exec " + strings.Join(quoted, " ") + " 2>" + tm.stderr
	if out, err := tm.cmd("-f", "/dev/null", "new-session", "-d", "-s", tm.session, "-x", "200", "-y", "50", shell).CombinedOutput(); err != nil {
		t.Fatalf("starting tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { tm.cmd("kill-server").Run() })
	return tm
}

func (tm *tmux) cmd(args ...string) *exec.Cmd {
	return exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...)
}

func (tm *tmux) send(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		args := []string{"send-keys", "-t", tm.session}
		if k == "Enter" || k == "Escape" {
			args = append(args, k)
		} else {
			args = append(args, "-l", k) // literally: "dd" is two keys, not a key name
		}
		if out, err := tm.cmd(args...).CombinedOutput(); err != nil {
			t.Fatalf("tmux send-keys %q: %v\n%s", k, err, out)
		}
	}
}

// sendUntil types keys and waits for ok; if the screen does not show it in
// 3 s, it clears any half-typed prompt (Escape) and types them once more.
func (tm *tmux) sendUntil(t *testing.T, what string, keys []string, ok func(string) bool) string {
	t.Helper()
	tm.send(t, keys...)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if s := tm.capture(t); ok(s) {
			return s
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%s not shown 3 s after the keys %q: typing them again; the screen:\n%s", what, keys, tm.capture(t))
	tm.send(t, append([]string{"Escape"}, keys...)...)
	return tm.waitFor(t, what, 5*time.Second, ok)
}

func (tm *tmux) capture(t *testing.T) string {
	t.Helper()
	out, err := tm.cmd("capture-pane", "-p", "-t", tm.session).Output()
	if err != nil {
		b, _ := os.ReadFile(tm.stderr)
		t.Fatalf("tmux capture-pane: %v (did the program exit? its stderr: %s)", err, b)
	}
	return string(out)
}

func (tm *tmux) alive() bool { return tm.cmd("has-session", "-t", tm.session).Run() == nil }

// waitFor captures the pane until ok says yes, and returns that screen.
func (tm *tmux) waitFor(t *testing.T, what string, limit time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := tm.capture(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; the screen:\n%s", what, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
