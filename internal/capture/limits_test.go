package capture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// A process that moves itself into a memory-limited cgroup waits
// uninterruptibly in the move while still outside it (echo $$ >
// cgroup.procs: the kernel's RCU grace period). Read at that wait it has no
// limit; it is asked again a second later, not at each wait, and found
// limited then. Asked once for good before, it never was: watch's
// TestMemoryLimitRereads named no cgroup once in CI.
func TestLimitsAskAgainAfterAMove(t *testing.T) {
	requirePrivileges(t)
	mount := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(mount, "cgroup.procs")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no cgroup v1 memory controller at %s: %v", mount, err)
		}
		t.Skipf("no cgroup v1 memory controller at %s", mount)
	}
	name := fmt.Sprintf("whyslow-limits-%d", os.Getpid())
	dir := filepath.Join(mount, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sleeper.Process.Kill()
		sleeper.Wait()
		os.Remove(dir)
	})
	const limit = 16 << 20
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.Itoa(limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	pid := uint32(sleeper.Process.Pid)
	var l limits
	memoryAt := func(at uint64) []*event.MemoryLimit {
		var out []*event.MemoryLimit
		for _, e := range l.seen(&event.OffCPU{Header: event.Header{Time: at, PID: pid, TID: pid}, State: 'D'}) {
			if m, ok := e.(*event.MemoryLimit); ok {
				out = append(out, m)
			}
		}
		return out
	}

	const t0 = uint64(50e9)
	if m := memoryAt(t0); len(m) != 0 {
		t.Fatalf("a process outside any limited cgroup has a memory limit: %+v", m[0])
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(int(pid))), 0o644); err != nil {
		t.Fatal(err)
	}
	if m := memoryAt(t0 + unlimitedAgainNS/2); len(m) != 0 {
		t.Errorf("asked again within a second of finding no limit: %+v", m[0])
	}
	m := memoryAt(t0 + unlimitedAgainNS)
	if len(m) != 1 || m[0].LimitBytes != limit || !strings.HasSuffix(event.DecodeText(m[0].Cgroup), "/"+name) {
		t.Fatalf("a second on, in %s: %+v, want its %d-byte limit", name, m, limit)
	}
	if m := memoryAt(t0 + 3*unlimitedAgainNS); len(m) != 0 {
		t.Errorf("a limit found is read again at a later wait: %+v", m[0])
	}
}
