// Package target starts or finds the process whyslow follows.
package target

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/whyslow/whyslow/internal/sysinfo"
)

// ErrNotFound is a command that could not be found or started (exit 127, as a shell).
var ErrNotFound = errors.New("command not found")

// Gated is a child started behind a gate: it exists (so its pid can join the
// target set) but runs nothing of the command until Open is called.
type Gated struct {
	Cmd  *exec.Cmd
	gate *os.File
}

// gateScript restores the user's umask, waits for a byte on fd 3, closes it,
// and execs the command: the command's stdin, stdout and stderr stay untouched.
const gateScript = `umask "$1"; shift; read -r _ <&3; exec 3<&-; exec "$@"`

// CommandUmask is the umask a started command gets: the user's, when whyslow
// has narrowed its own to keep its files private.
var CommandUmask = 0o022

// Start resolves argv[0] like a shell and starts the gated child.
func Start(argv []string) (*Gated, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command given")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", argv[0], ErrNotFound)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating gate pipe: %w", err)
	}
	args := append([]string{"-c", gateScript, "whyslow-gate", fmt.Sprintf("%04o", CommandUmask), path}, argv[1:]...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	r.Close()
	return &Gated{Cmd: cmd, gate: w}, nil
}

// PID is the child's pid, valid before the gate opens.
func (g *Gated) PID() int { return g.Cmd.Process.Pid }

// Open lets the command run.
func (g *Gated) Open() error {
	defer g.gate.Close()
	if _, err := g.gate.Write([]byte("go\n")); err != nil {
		return fmt.Errorf("opening gate: %w", err)
	}
	return nil
}

// CPUTime is the command's user and system CPU time (with its waited-for
// descendants), known once it has exited.
func (g *Gated) CPUTime() (user, system time.Duration) {
	if g.Cmd.ProcessState == nil {
		return 0, 0
	}
	return g.Cmd.ProcessState.UserTime(), g.Cmd.ProcessState.SystemTime()
}

// Wait waits for the command and returns its exit code as a shell reports it:
// the code, or 128+signal for a signal death.
func (g *Gated) Wait() (int, error) {
	err := g.Cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1, err
	}
	ws, ok := g.Cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return g.Cmd.ProcessState.ExitCode(), nil
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

// Exists checks that a pid names a live process.
func Exists(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("invalid pid %d", pid)
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return fmt.Errorf("no process with pid %d", pid)
	}
	return nil
}

// Resolve finds argv[0] as a shell would; a non-executable file is fs.ErrPermission.
func Resolve(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) && errors.Is(ee.Err, os.ErrPermission) {
			return "", os.ErrPermission
		}
		return "", fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	return p, nil
}

// ProcCPUTime reads a live process's user and system time (its own and its
// reaped children's) from this machine's /proc.
func ProcCPUTime(pid int) (user, system time.Duration, ok bool) {
	return sysinfo.Host.ProcCPUTime(pid)
}
