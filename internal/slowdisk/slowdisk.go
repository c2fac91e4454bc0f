// Package slowdisk makes a slow disk for tests and demos: an ext4 filesystem
// on a loop device over a file, mounted in a temporary directory and
// throttled with cgroup v1 blkio like an old HDD, optionally with small dirty
// page limits so buffered writers are throttled as on a small server.
//
// Every change is written to a state file before it is made, so Close undoes
// it on success, failure or Ctrl-C, and Clean undoes what a crashed run left.
package slowdisk

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/whyslow/whyslow/internal/format"
)

// Options shape the disk. Zero values mean "leave as is".
type Options struct {
	Size                int64 // bytes of the backing file (default 1 GiB, sparse)
	ReadBPS, WriteBPS   uint64
	ReadIOPS, WriteIOPS uint64
	DirtyBytes          uint64 // vm.dirty_bytes
	DirtyBackground     uint64 // vm.dirty_background_bytes
	// ImageDir holds the backing file (default /var/tmp). On tmpfs the disk
	// is as fast as memory and as steady: the block layer and the journal
	// without a real device's noise (the benchmark's fsync loop).
	ImageDir string
}

// StateDir holds one state file per live disk.
var StateDir = "/run/whyslow-slowdisk"

const blkio = "/sys/fs/cgroup/blkio"

// state is what was changed, in order; Close undoes it in reverse.
type state struct {
	Owner    int               `json:"owner"`
	Image    string            `json:"image,omitempty"`
	Loop     string            `json:"loop,omitempty"`
	Mount    string            `json:"mount,omitempty"`
	Throttle []string          `json:"throttle,omitempty"` // blkio files written
	DevNum   string            `json:"dev,omitempty"`      // MAJ:MIN
	Sysctl   map[string]string `json:"sysctl,omitempty"`   // name -> value before
	path     string
}

// Disk is a live slow disk.
type Disk struct {
	Dir    string // where the filesystem is mounted
	Device string // /dev/loopN
	DevNum string // MAJ:MIN
	st     *state
}

// Create makes the disk. On error, whatever was done is undone.
func Create(o Options) (d *Disk, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("slowdisk needs root (loop devices, mounts, blkio, sysctl)")
	}
	if err := Clean(); err != nil {
		return nil, fmt.Errorf("cleaning a previous run: %w", err)
	}
	if err := os.MkdirAll(StateDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(StateDir, "disk-*.json")
	if err != nil {
		return nil, err
	}
	f.Close()
	st := &state{Owner: os.Getpid(), Sysctl: map[string]string{}, path: f.Name()}
	d = &Disk{st: st}
	defer func() {
		if err != nil {
			d.Close()
			d = nil
		}
	}()
	if o.Size == 0 {
		o.Size = 1 << 30
	}
	if o.ImageDir == "" {
		o.ImageDir = "/var/tmp"
	}
	if err := d.attach(o); err != nil {
		return d, err
	}
	if err := d.mount(); err != nil {
		return d, err
	}
	if err := d.limit(o); err != nil {
		return d, err
	}
	return d, nil
}

// attach makes the image file, puts a loop device on it and an ext4 on
// that. Each thing made is saved in the state file before the next is
// made, so that Close (or Clean, after a crash) undoes what was done.
func (d *Disk) attach(o Options) error {
	st := d.st
	img, err := os.CreateTemp(o.ImageDir, "whyslow-slowdisk-*.img")
	if err != nil {
		return err
	}
	st.Image = img.Name()
	if err := st.save(); err != nil {
		return err
	}
	if err := img.Truncate(o.Size); err != nil {
		img.Close()
		return err
	}
	img.Close()
	out, err := run("losetup", "--find", "--show", st.Image)
	if err != nil {
		return err
	}
	st.Loop = out
	d.Device = out
	if err := st.save(); err != nil {
		return err
	}
	_, err = run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", st.Loop)
	return err
}

// mount mounts the loop device on a new directory anyone may write in (as
// /tmp: sticky), saved in the state file first.
func (d *Disk) mount() error {
	st := d.st
	mnt, err := os.MkdirTemp("", "whyslow-slowdisk-")
	if err != nil {
		return err
	}
	st.Mount = mnt
	d.Dir = mnt
	if err := st.save(); err != nil {
		return err
	}
	if _, err := run("mount", st.Loop, mnt); err != nil {
		st.Mount = ""
		os.Remove(mnt)
		st.save()
		return err
	}
	os.Chmod(mnt, 0o1777)
	return nil
}

// limit throttles the loop device in blkio (by its device number) and sets
// the dirty limits the options ask for, each saved in the state file before
// it is set, so that Close puts it back.
func (d *Disk) limit(o Options) error {
	st := d.st
	devnum, err := os.ReadFile(filepath.Join("/sys/class/block", filepath.Base(st.Loop), "dev"))
	if err != nil {
		return err
	}
	st.DevNum = strings.TrimSpace(string(devnum))
	d.DevNum = st.DevNum
	// What the machine dirtied before the disk existed (a binary just built,
	// say) goes to disk now: under the small dirty limits below it would
	// throttle the first writer at once, and its writeback would share the
	// disk under the loop file with the scenario's own.
	syscall.Sync()
	limits := map[string]uint64{
		"blkio.throttle.read_bps_device": o.ReadBPS, "blkio.throttle.write_bps_device": o.WriteBPS,
		"blkio.throttle.read_iops_device": o.ReadIOPS, "blkio.throttle.write_iops_device": o.WriteIOPS,
	}
	for file, v := range limits {
		if v == 0 {
			continue
		}
		st.Throttle = append(st.Throttle, file)
		if err := st.save(); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(blkio, file), []byte(fmt.Sprintf("%s %d", st.DevNum, v)), 0o644); err != nil {
			return fmt.Errorf("throttling %s: %w", file, err)
		}
	}
	sysctls := map[string]uint64{"vm/dirty_bytes": o.DirtyBytes, "vm/dirty_background_bytes": o.DirtyBackground}
	for name, v := range sysctls {
		if v == 0 {
			continue
		}
		if err := st.setSysctl(name, fmt.Sprint(v)); err != nil {
			return err
		}
	}
	return nil
}

// setSysctl saves what a dirty limit and its ratio twin were, then writes it.
// Writing dirty_bytes zeroes dirty_ratio, so both are saved.
func (st *state) setSysctl(name, value string) error {
	twin := strings.Replace(strings.Replace(name, "_bytes", "_ratio", 1), "background_bytes", "background_ratio", 1)
	for _, n := range []string{name, twin} {
		if _, saved := st.Sysctl[n]; saved {
			continue
		}
		b, err := os.ReadFile("/proc/sys/" + n)
		if err != nil {
			return err
		}
		st.Sysctl[n] = strings.TrimSpace(string(b))
	}
	if err := st.save(); err != nil {
		return err
	}
	return os.WriteFile("/proc/sys/"+name, []byte(value), 0o644)
}

func (st *state) save() error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := st.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, st.path)
}

// Close undoes everything, in reverse order, and reports what it could not undo.
func (d *Disk) Close() error {
	if d == nil || d.st == nil {
		return nil
	}
	err := d.st.undo()
	d.st = nil
	return err
}

func (st *state) undo() error {
	var errs []error
	for _, file := range st.Throttle {
		if st.DevNum == "" {
			break
		}
		if err := os.WriteFile(filepath.Join(blkio, file), []byte(st.DevNum+" 0"), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing throttle %s: %w", file, err))
		}
	}
	// ratios first: writing a ratio zeroes its bytes twin, so bytes are written last
	var ratios, bytes []string
	for n := range st.Sysctl {
		if strings.HasSuffix(n, "_ratio") {
			ratios = append(ratios, n)
		} else {
			bytes = append(bytes, n)
		}
	}
	for _, n := range append(ratios, bytes...) {
		v := st.Sysctl[n]
		if v == "0" {
			continue // writing 0 is refused or meaningless; its twin restores it
		}
		if err := os.WriteFile("/proc/sys/"+n, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s=%s: %w", n, v, err))
		}
	}
	if st.Mount != "" {
		if err := umount(st.Mount); err != nil {
			errs = append(errs, err)
		} else {
			os.Remove(st.Mount)
		}
	}
	if st.Loop != "" {
		if _, err := run("losetup", "-d", st.Loop); err != nil && !strings.Contains(err.Error(), "No such device") {
			errs = append(errs, err)
		}
	}
	if st.Image != "" {
		if err := os.Remove(st.Image); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 && st.path != "" {
		os.Remove(st.path)
	}
	return errors.Join(errs...)
}

// umount retries while the filesystem is busy (a process still exiting).
func umount(dir string) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = syscall.Unmount(dir, 0); err == nil || errors.Is(err, syscall.EINVAL) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err = syscall.Unmount(dir, syscall.MNT_DETACH); err == nil {
		return nil
	}
	return fmt.Errorf("unmounting %s: %w", dir, err)
}

// Clean undoes what runs whose owner is gone left behind.
func Clean() error {
	files, _ := filepath.Glob(filepath.Join(StateDir, "disk-*.json"))
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		st := &state{path: f}
		if json.Unmarshal(b, st) != nil {
			os.Remove(f)
			continue
		}
		if st.Owner != os.Getpid() && alive(st.Owner) {
			continue // another live run's disk
		}
		if err := st.undo(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, s)
	}
	return s, nil
}

// ParseSize reads 512M, 4k, 1G or plain bytes; empty is 0 (leave as is).
func ParseSize(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := format.ParseSize(s)
	return uint64(n), err
}
