package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/baseline"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/sysinfo"
	"golang.org/x/sys/unix"
)

type baselineOptions struct {
	seconds float64
	size    int64
	noSave  bool
}

func newBaseline() *cobra.Command {
	o := baselineOptions{}
	cmd := &cobra.Command{
		Use:   "baseline DEVICE|DIRECTORY",
		Short: "Measure what a block device can do, for later runs to compare with",
		Long: `Measures a block device when nothing else runs, as hdparm -t and a
read-only fio job do: sequential reads of 1 MiB, then random reads of 4 KiB,
one at a time, past the page cache (O_DIRECT), each for --seconds.

Given a device (/dev/vda, or vda), it only reads it. Given a directory, it
writes a file there (at most --size, removed after), syncs it, and reads it
back: the write throughput too, on the device under the directory.

The result is kept per device, under its model and serial where the kernel
gives them (else its name, and a loop device's backing file), in
$XDG_STATE_HOME/whyslow/baselines.json (~/.local/state/whyslow/ without
XDG_STATE_HOME). Later recordings carry it, and their verdicts compare the
device's rate with it: "loop0 was 100% busy at 8.0 MiB/s read, its measured
ceiling (8.1 MiB/s)". A blkio or io.max throttle on the device is measured
too, as the ceiling it is.

Run it on an idle machine: whatever else uses the device takes from what is
measured. Exit codes: 0, 1 when the device could not be read or written, 2 for
an argument that is neither a block device nor a directory.`,
		Example: `  sudo whyslow baseline vda
  whyslow baseline /var/lib/postgresql   # writes and reads a file there`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBaseline(cmd.OutOrStdout(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.seconds, "seconds", 3, "how long each measurement runs")
	f.Int64Var(&o.size, "size", 256<<20, "the most written under a directory (bytes)")
	f.BoolVar(&o.noSave, "no-save", false, "print the result, keep nothing")
	return cmd
}

// runBaseline measures arg's device and keeps the result.
func runBaseline(w io.Writer, arg string, o baselineOptions) error {
	if o.seconds <= 0 || o.seconds > 600 {
		return usageErr("--seconds %v: give a time between 0 and 600", o.seconds)
	}
	if o.size < 1<<20 {
		return usageErr("--size %d: give at least 1 MiB (1048576)", o.size)
	}
	dev, dir, err := baselineTarget(arg)
	if err != nil {
		return err
	}
	opts := baseline.Options{Phase: time.Duration(o.seconds * float64(time.Second)), FileSize: o.size}
	var r baseline.Result
	if dir != "" {
		r, err = baseline.WriteAndRead(dir, opts)
	} else {
		r, err = baseline.ReadDevice(filepath.Join("/dev", dev.Name), opts)
	}
	if err != nil {
		return withCode(ExitError, err)
	}
	r.Device, r.Model, r.Serial = dev.Name, dev.Model, dev.Serial
	writeBaseline(w, dev, r)
	if o.noSave {
		return nil
	}
	path, err := baseline.File()
	if err != nil {
		return withCode(ExitError, err)
	}
	if err := baseline.Save(path, baseline.Key(dev), r); err != nil {
		return withCode(ExitError, err)
	}
	fmt.Fprintf(w, "kept in %s: later recordings compare %s with it\n", format.Safe(path), format.Safe(dev.Name))
	return nil
}

// baselineTarget is the device arg names (/dev/X or X), or the directory it
// names and the device under it.
func baselineTarget(arg string) (sysinfo.BlockDevice, string, error) {
	devs := sysinfo.Host.BlockDevices()
	byDev := func(d uint32) (sysinfo.BlockDevice, bool) {
		for _, b := range devs {
			if b.Dev == d {
				return b, true
			}
		}
		return sysinfo.BlockDevice{}, false
	}
	var st unix.Stat_t
	if err := unix.Stat(arg, &st); err != nil {
		// A bare name: vda, loop0.
		for _, b := range devs {
			if b.Name == arg && !strings.ContainsRune(arg, '/') {
				return b, "", nil
			}
		}
		return sysinfo.BlockDevice{}, "", usageErr("%s: not a block device or a directory", format.Safe(arg))
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		if b, ok := byDev(sysinfo.KernelDev(st.Rdev)); ok {
			return b, "", nil
		}
	case unix.S_IFDIR:
		if b, ok := byDev(diskOf(sysinfo.KernelDev(st.Dev))); ok {
			return b, arg, nil
		}
		return sysinfo.BlockDevice{}, "", usageErr("%s: on no block device (a tmpfs, a network filesystem?)", format.Safe(arg))
	}
	return sysinfo.BlockDevice{}, "", usageErr("%s: not a block device or a directory", format.Safe(arg))
}

// diskOf is the whole disk a partition is of (block requests name the
// disk), else dev itself.
func diskOf(dev uint32) uint32 {
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", dev>>20, dev&(1<<20-1))
	if _, err := os.Stat(filepath.Join(sys, "partition")); errors.Is(err, os.ErrNotExist) {
		return dev
	}
	b, err := os.ReadFile(filepath.Join(sys, "..", "dev"))
	if err != nil {
		return dev
	}
	var maj, min uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d:%d", &maj, &min); err != nil {
		return dev
	}
	return maj<<20 | min
}

// writeBaseline prints a measurement as hdparm -t and fio users read it.
func writeBaseline(w io.Writer, dev sysinfo.BlockDevice, r baseline.Result) {
	id := "no model or serial from the kernel"
	if dev.Serial != "" {
		id = strings.TrimSpace(dev.Model + " " + dev.Serial)
	} else if dev.Backing != "" {
		id = "loop over " + dev.Backing
	}
	fmt.Fprintf(w, "%s (%s)\n", format.Safe(dev.Name), format.Safe(id))
	fmt.Fprintf(w, "  sequential read   %s/s (1 MiB requests, one at a time)\n", format.Bytes(uint64(r.SeqReadBPS)))
	fmt.Fprintf(w, "  random read       %.0f IOPS, %.2f ms average, %.2f ms p99 (4 KiB, one at a time)\n",
		r.RandReadIOPS, r.RandReadAvgMS, r.RandReadP99MS)
	if r.SeqWriteBPS > 0 {
		fmt.Fprintf(w, "  sequential write  %s/s (1 MiB requests, synced)\n", format.Bytes(uint64(r.SeqWriteBPS)))
	}
}
