package capture

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/slowdisk"
)

// A write with O_DSYNC waits twice a call, at two sites: its data's
// writeback, woken by the block layer's completion, and the journal's
// commit, woken by jbd2. Their stacks are reused by site (sched.bpf.h,
// wait_site), never one site's for the other's: every wait jbd2 ended
// shows the journal's stack, and no other wait does.
func TestDsyncWaitsKeepTheirSites(t *testing.T) {
	requirePrivileges(t)
	d, err := slowdisk.Create(slowdisk.Options{Size: 64 << 20, ImageDir: "/dev/shm"})
	if err != nil {
		t.Fatalf("making an ext4 over a loop device (make deps installs mkfs.ext4): %v", err)
	}
	defer d.Close()
	// raw_tp's arguments lie on the kernel stack as tp_btf's do.
	for _, flavour := range []string{"tp_btf", "raw_tp"} {
		t.Run(flavour, func(t *testing.T) {
			out := filepath.Join(d.Dir, "dd.dat")
			// The distance to the site, once learned, says the stacks
			// are reused (0: every wait unwinds, and the test would pass
			// without the reuse).
			var learned uint32
			watch := func(e *Engine, _ []event.Event) {
				if v := e.coll.Variables["site_words"]; v != nil {
					v.Get(&learned)
				}
			}
			c := runCapturedWatching(t, Options{Flavour: flavour}, watch, "dd", "if=/dev/zero", "of="+out, "bs=4k", "count=400", "oflag=dsync")
			if learned == 0 {
				t.Errorf("the wait site's distance was not learned: every wait unwound its stack")
			}
			write, _ := event.SyscallNr("write")
			var journal, other, journalOther, otherJournal int
			for _, o := range eventsOf[*event.OffCPU](c) {
				if o.PID != c.pid || o.State != 'D' || o.Syscall != write {
					continue
				}
				byJBD2 := strings.HasPrefix(o.WakerComm, "jbd2")
				atJournal := slices.ContainsFunc(o.Stack, func(f string) bool { return strings.HasPrefix(f, "jbd2_log_wait_commit") })
				switch {
				case byJBD2 && atJournal:
					journal++
				case byJBD2:
					journalOther++
					if journalOther == 1 {
						t.Logf("a wait jbd2 ended, with another site's stack: %s", strings.Join(o.Stack, " < "))
					}
				case atJournal:
					otherJournal++
				default:
					other++
				}
			}
			t.Logf("waits in write: %d at the journal, %d elsewhere; the site %d words above the tracepoint's arguments", journal, other, learned)
			if journal < 300 || other < 300 {
				t.Errorf("want about 400 waits at each site, got %d at the journal and %d elsewhere", journal, other)
			}
			if journalOther > 0 || otherJournal > 0 {
				t.Errorf("stacks of one site given to the other's waits: %d journal waits without the journal's stack, %d other waits with it", journalOther, otherJournal)
			}
			c.noLoss(t)
		})
	}
}

// A kernel thread attached to (attach -p, as one asks why jbd2 is busy) is
// a target like any other: its waits are captured, though most of its
// switches are to and from other kernel threads, which a command's capture
// skips (sched.bpf.h, on_switch). jbd2 commits each of dd's O_DSYNC writes
// and sleeps between them.
func TestAttachedKernelThreadWaits(t *testing.T) {
	requirePrivileges(t)
	d, err := slowdisk.Create(slowdisk.Options{Size: 64 << 20, ImageDir: "/dev/shm"})
	if err != nil {
		t.Fatalf("making an ext4 over a loop device (make deps installs mkfs.ext4): %v", err)
	}
	defer d.Close()
	jbd2 := threadNamed(t, "jbd2/"+filepath.Base(d.Device)+"-")
	c := runCapturedBeside(t, Options{}, []uint32{jbd2}, nil,
		"dd", "if=/dev/zero", "of="+filepath.Join(d.Dir, "dd.dat"), "bs=4k", "count=400", "oflag=dsync")
	waits := 0
	for _, o := range eventsOf[*event.OffCPU](c) {
		if o.PID == jbd2 {
			waits++
		}
	}
	t.Logf("jbd2 (pid %d): %d waits", jbd2, waits)
	if waits < 200 {
		t.Errorf("jbd2, attached to, has %d waits for dd's 400 commits, want about 400", waits)
	}
}

// threadNamed is the pid of the one process whose name begins with prefix.
func threadNamed(t *testing.T, prefix string) uint32 {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil || !strings.HasPrefix(string(b), prefix) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err == nil {
			return uint32(pid)
		}
	}
	t.Fatalf("no process named %s*", prefix)
	return 0
}
