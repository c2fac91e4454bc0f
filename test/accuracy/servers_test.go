package accuracy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

// startServers starts testdata/slow_servers.py and writes its ports and
// socket into env. It is stopped with the test: its stdin closed (it exits
// on that), killed if it has not within a few seconds.
func startServers(t *testing.T, env *Env) {
	t.Helper()
	dir := t.TempDir()
	// The sampled run's programs are nobody's: they must reach the socket
	// through its directory and write to it.
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	env.UnixPath = filepath.Join(dir, "slow.sock")
	cmd := exec.Command(harness.Python(t), "testdata/slow_servers.py", env.UnixPath)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil {
			_, err = fmt.Sscanf(line, "tcp=%d udp=%d", &env.TCPPort, &env.UDPPort)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("the slow servers did not start: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the slow servers did not start in 10 s")
	}
	if err := os.Chmod(env.UnixPath, 0o777); err != nil {
		t.Fatal(err)
	}
}
