// Command slowdisk runs a command with a slow disk mounted, then removes it:
//
//	slowdisk [--write-bps 4M] [--read-bps 8M] [--dirty-bytes 32M] -- CMD ARGS...
//	slowdisk clean
//
// CMD sees the mount point in $SLOWDISK_DIR and the device in $SLOWDISK_DEV.
// Everything is restored when CMD exits, fails, or on Ctrl-C; `slowdisk clean`
// undoes what a crashed run left behind.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/whyslow/whyslow/internal/slowdisk"
)

func main() { os.Exit(run()) }

func run() int {
	if len(os.Args) > 1 && os.Args[1] == "clean" {
		if err := slowdisk.Clean(); err != nil {
			fmt.Fprintln(os.Stderr, "slowdisk:", err)
			return 1
		}
		return 0
	}
	fs := flag.NewFlagSet("slowdisk", flag.ContinueOnError)
	size := fs.String("size", "1G", "backing file size")
	rbps := fs.String("read-bps", "", "read bandwidth limit (bytes/s, e.g. 8M)")
	wbps := fs.String("write-bps", "4M", "write bandwidth limit")
	riops := fs.Uint64("read-iops", 0, "read IOPS limit")
	wiops := fs.Uint64("write-iops", 0, "write IOPS limit")
	dirty := fs.String("dirty-bytes", "", "vm.dirty_bytes while the disk lives")
	dirtyBg := fs.String("dirty-background-bytes", "", "vm.dirty_background_bytes while the disk lives")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "slowdisk: give a command after --, or 'clean'")
		return 2
	}
	var o slowdisk.Options
	var err error
	parse := func(s string) uint64 {
		v, e := slowdisk.ParseSize(s)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	sz := parse(*size)
	o.Size = int64(sz)
	o.ReadBPS, o.WriteBPS = parse(*rbps), parse(*wbps)
	o.ReadIOPS, o.WriteIOPS = *riops, *wiops
	o.DirtyBytes, o.DirtyBackground = parse(*dirty), parse(*dirtyBg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowdisk:", err)
		return 2
	}
	signal.Ignore(syscall.SIGINT) // the command gets Ctrl-C; we clean up after it
	d, err := slowdisk.Create(o)
	signal.Reset(syscall.SIGINT)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowdisk:", err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "SLOWDISK_DIR="+d.Dir, "SLOWDISK_DEV="+d.Device)
	code := 0
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			fmt.Fprintln(os.Stderr, "slowdisk:", err)
			code = 127
		}
	}
	if err := d.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "slowdisk: cleaning up:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
