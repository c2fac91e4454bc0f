package accuracy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/whyslow/whyslow/internal/slowdisk"
	"github.com/whyslow/whyslow/test/harness"
)

// The machine the programs run against, made once per test and undone
// with it: a slow disk and its read file, a cpu cgroup with a quota, a
// memory cgroup with a limit, the slow servers, and the dirty limits, small
// only while a program whose dominant block is dirty-throttle runs.
const (
	diskBPS  = 16 * MiB // read and write throttles of the slow disk
	readSize = 40 * MiB // the read file: more than a program's reading blocks read
	memLimit = 16 * MiB
	// The small dirty limits: a writer runs free up to their mean.
	smallDirty, smallDirtyBackground = 8 * MiB, 4 * MiB
)

type machine struct {
	env   Env // without Scratch and Times, which are each program's
	disk  *slowdisk.Disk
	dirty *dirtyLimits
}

func newMachine(t *testing.T) *machine {
	t.Helper()
	harness.RequireRoot(t)
	harness.Unchanged(t)
	d, err := slowdisk.Create(slowdisk.Options{Size: 512 * MiB, ReadBPS: diskBPS, WriteBPS: diskBPS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("removing the slow disk: %v", err)
		}
	})
	m := &machine{disk: d, dirty: saveDirtyLimits(t)}
	m.env = Env{
		ReadFile: filepath.Join(d.Dir, "read.bin"), ReadSize: readSize,
		ReadBPS: diskBPS, WriteBPS: diskBPS, Freerun: (smallDirty + smallDirtyBackground) / 2,
		CPUHome:   v1Cgroup(t, "cpu", "-home", nil),
		CPUCgroup: v1Cgroup(t, "cpu", "", map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "20000"}),
		MemCgroup: v1Cgroup(t, "memory", "", map[string]string{"memory.limit_in_bytes": fmt.Sprint(memLimit)}),
		MemLimit:  memLimit,
	}
	writeFile(t, m.env.ReadFile, readSize)
	startServers(t, &m.env)
	return m
}

// writeFile writes size bytes to path and syncs them: on the slow disk, at
// its write throttle.
func writeFile(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, MiB)
	for i := range chunk {
		chunk[i] = byte(i) // not zeros: nothing on the way may skip them
	}
	for n := int64(0); n < size; n += MiB {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// prepare makes the machine ready for p: its scratch directory, the read
// file's pages out of the cache (so each read block reads from the disk),
// the dirty limits it runs under. done undoes it: the scratch files go
// (their dirty pages with them, unwritten), what is left dirty is written
// out, the limits restored, so that no program's data slows the next one.
func (m *machine) prepare(t *testing.T, p *Program, env *Env) (done func()) {
	t.Helper()
	if err := os.Mkdir(env.Scratch, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(env.Scratch, 0o777) // past the umask: the sampled run's programs are nobody's
	evict(t, env.ReadFile)
	if p.SmallDirty() {
		m.dirty.set(t, smallDirty, smallDirtyBackground)
	}
	return func() {
		if err := os.RemoveAll(env.Scratch); err != nil {
			t.Error(err)
		}
		syscall.Sync()
		m.dirty.restore(t)
	}
}

// evict drops a file's pages from the page cache.
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatalf("evicting %s: %v", path, err)
	}
}

// v1Cgroup makes a cgroup in controller's v1 hierarchy with these settings
// (in their names' order: a quota after its period) and returns its
// directory (whyslow-accuracy-PID and suffix). Any user may move its own
// tasks into it (the sampled run's programs are nobody's). It is removed
// with the test, anything left in it moved out first. A machine without the
// controller skips, or fails in CI.
func v1Cgroup(t *testing.T, controller, suffix string, settings map[string]string) string {
	t.Helper()
	mount := "/sys/fs/cgroup/" + controller
	if _, err := os.Stat(mount + "/tasks"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no cgroup v1 %s controller at %s: %v", controller, mount, err)
		}
		t.Skipf("no cgroup v1 %s controller at %s", controller, mount)
	}
	dir := fmt.Sprintf("%s/whyslow-accuracy-%d%s", mount, os.Getpid(), suffix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// tasks, not cgroup.procs: a cpu-quota block moves one thread.
		if b, err := os.ReadFile(dir + "/tasks"); err == nil {
			for _, tid := range strings.Fields(string(b)) {
				os.WriteFile(mount+"/tasks", []byte(tid), 0o644)
			}
		}
		if controller == "memory" {
			os.WriteFile(dir+"/memory.force_empty", []byte("1"), 0o644)
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing cgroup %s: %v", dir, err)
		}
	})
	names := make([]string, 0, len(settings))
	for f := range settings {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(settings[f]), 0o644); err != nil {
			t.Fatalf("setting %s/%s: %v", dir, f, err)
		}
	}
	for _, f := range []string{"tasks", "cgroup.procs"} {
		if err := os.Chmod(filepath.Join(dir, f), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
