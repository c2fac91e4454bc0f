package slowdisk

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/whyslow/whyslow/test/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.ReportSkipped()
	os.Exit(code)
}

func requireRoot(t *testing.T) { t.Helper(); harness.RequireRoot(t) }

func sysctl(t *testing.T, name string) string {
	b, err := os.ReadFile("/proc/sys/vm/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestCreateThrottleAndRestore(t *testing.T) {
	requireRoot(t)
	ratio := sysctl(t, "dirty_ratio")
	d, err := Create(Options{Size: 64 << 20, WriteBPS: 1 << 20, DirtyBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			d.Close()
		}
	}()
	if got := sysctl(t, "dirty_bytes"); got != "8388608" {
		t.Errorf("dirty_bytes %s while the disk lives", got)
	}
	// 2 MiB with O_DIRECT through a 1 MiB/s throttle takes about 2 s.
	start := time.Now()
	out, err := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(d.Dir, "f"), "bs=1M", "count=2", "oflag=direct").CombinedOutput()
	if err != nil {
		t.Fatalf("dd: %v %s", err, out)
	}
	if el := time.Since(start); el < 1500*time.Millisecond {
		t.Errorf("2 MiB direct write took %v: the throttle did not apply", el)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if sysctl(t, "dirty_bytes") != "0" || sysctl(t, "dirty_ratio") != ratio {
		t.Errorf("dirty limits not restored: bytes %s ratio %s (was %s)", sysctl(t, "dirty_bytes"), sysctl(t, "dirty_ratio"), ratio)
	}
	if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
		t.Errorf("mount point %s still there", d.Dir)
	}
	if b, _ := os.ReadFile("/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"); strings.Contains(string(b), d.DevNum) {
		t.Errorf("throttle left: %s", b)
	}
}

// A run killed with SIGKILL leaves its disk behind; the next Clean removes it.
func TestCleanAfterCrash(t *testing.T) {
	requireRoot(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=TestHelperHoldDisk")
	cmd.Env = append(os.Environ(), "SLOWDISK_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := out.Read(buf) // the helper prints its mount point once the disk exists
	dir := strings.TrimSpace(string(buf[:n]))
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(dir); err != nil || !strings.HasPrefix(dir, os.TempDir()) {
		t.Fatalf("helper's disk %q not there after the crash: %v", dir, err)
	}
	if sysctl(t, "dirty_bytes") == "0" {
		t.Fatal("helper's dirty limit not in force after the crash")
	}
	if err := Clean(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Clean left the mount point %s", dir)
	}
	if sysctl(t, "dirty_bytes") != "0" {
		t.Errorf("Clean left dirty_bytes %s", sysctl(t, "dirty_bytes"))
	}
	if loops, _ := exec.Command("losetup", "-a").Output(); strings.Contains(string(loops), "whyslow-slowdisk") {
		t.Errorf("Clean left a loop device: %s", loops)
	}
}

func TestHelperHoldDisk(t *testing.T) {
	if os.Getenv("SLOWDISK_HELPER") != "1" {
		t.Skip("helper for TestCleanAfterCrash")
	}
	d, err := Create(Options{Size: 32 << 20, WriteBPS: 1 << 20, DirtyBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(d.Dir + "\n")
	time.Sleep(time.Minute) // killed before this ends
}
