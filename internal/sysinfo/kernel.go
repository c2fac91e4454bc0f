package sysinfo

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// MinKernel is the oldest Linux whyslow's programs load on: their hot paths
// read kernel structs through the bpf_rdonly_cast kfunc, which came in 6.2.
var MinKernel = [2]int{6, 2}

// KernelRelease reads the running kernel's release ("6.8.0-45-generic").
func (fs FS) KernelRelease() string {
	b, err := os.ReadFile(fs.path("/proc/sys/kernel/osrelease"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// KernelAtLeast reports whether a release string is major.minor or later.
// A release it cannot parse is taken as recent enough: loading the programs
// then says what is wrong.
func KernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

// KernelSymbolsVisible reports whether /proc/kallsyms shows this process
// real addresses. It shows zeros without CAP_SYSLOG when kernel.kptr_restrict
// is 1, or kernel.perf_event_paranoid is above 1; kernel stacks then go
// unnamed, and waits are told apart by their syscall alone.
func (fs FS) KernelSymbolsVisible() bool {
	f, err := os.Open(fs.path("/proc/kallsyms"))
	if err != nil {
		return false
	}
	defer f.Close()
	// Some kernels list absolute symbols at 0 first: a few lines tell.
	sc := bufio.NewScanner(f)
	for i := 0; i < 16 && sc.Scan(); i++ {
		if addr, _, _ := strings.Cut(sc.Text(), " "); strings.Trim(addr, "0") != "" {
			return true
		}
	}
	return false
}

// PIDMax reads kernel.pid_max: every process and thread id is below it.
// 0 when it cannot be read.
func (fs FS) PIDMax() uint32 {
	b, err := os.ReadFile(fs.path("/proc/sys/kernel/pid_max"))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 0
	}
	return uint32(n)
}
