package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/procsample"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

func newCheck() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Say what capture needs and whether this machine has it",
		Long: `Prints one line per requirement of capture and whether this machine has it.
Under each missing piece, a "fix:" line gives the command, capability or
kernel option that supplies it. Exits 0 when full capture works, 4 when
capture is impossible or degraded, with one sentence per missing piece
saying what will be missing. The last line says which capture run, attach
and record will use: eBPF, or, where it cannot load, the sampled capture
from /proc, and why.

whyslow needs Linux 6.2 or later with BTF, and root or the capabilities
CAP_BPF and CAP_PERFMON (CAP_SYSLOG too, to name kernel stacks).`,
		Example: `  sudo whyslow check
  whyslow check || echo "capture is degraded: see the fix: lines"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if degraded := runCheck(cmd.OutOrStdout(), sysinfo.Host); degraded > 0 {
				return withCode(ExitNoCapture, fmt.Errorf("%d requirement(s) missing: capture is degraded or impossible", degraded))
			}
			return nil
		},
	}
}

// What `whyslow check` tells to do about a missing piece.
const (
	fixPrivileges = "sudo whyslow ...; or grant CAP_BPF, CAP_PERFMON and CAP_SYSLOG (a systemd unit: AmbientCapabilities=CAP_BPF CAP_PERFMON CAP_SYSLOG, as the packaged units do)"
	fixSymbols    = "grant CAP_SYSLOG (AmbientCapabilities=CAP_SYSLOG), or let every user see them: sysctl kernel.kptr_restrict=0 kernel.perf_event_paranoid=1"
	fixKernel     = "boot Linux 6.2 or later"
	fixBTF        = "a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distributions' kernels are)"
	fixTracefs    = "mount -t tracefs tracefs /sys/kernel/tracing"
	fixPSI        = "a kernel with CONFIG_PSI=y, booted with psi=1 if CONFIG_PSI_DEFAULT_DISABLED=y"
	fixDelayacct  = "sysctl kernel.task_delayacct=1"
)

// tracepointFix names the kernel option a missing tracepoint comes with.
func tracepointFix(tp string) string {
	switch {
	case strings.HasPrefix(tp, "block_"):
		return "a kernel with CONFIG_BLOCK=y"
	case strings.HasPrefix(tp, "io_uring_"):
		return "a kernel with CONFIG_IO_URING=y"
	case tp == "tcp_probe" || tp == "inet_sock_set_state":
		return "a kernel with CONFIG_INET=y"
	case tp == "sys_enter" || tp == "sys_exit":
		return "a kernel with CONFIG_FTRACE_SYSCALLS=y"
	case tp == "local_timer_entry":
		return "an x86 kernel with CONFIG_X86_LOCAL_APIC=y (CPU samples are missing otherwise)"
	}
	return "a kernel with CONFIG_TRACEPOINTS=y and BTF"
}

// runCheck prints the checks and returns how many requirements are missing.
func runCheck(w io.Writer, fs sysinfo.FS) int {
	missing := 0
	// line prints one requirement; ifMissing, when not empty, makes a miss
	// count (capture is degraded), and fix says what supplies it.
	line := func(ok bool, what, detail, ifMissing, fix string) {
		mark := "ok  "
		if !ok {
			mark = "MISS"
			if ifMissing != "" {
				missing++
				detail += ": " + ifMissing
			}
		}
		fmt.Fprintf(w, "%s  %-22s %s\n", mark, what, detail)
		if !ok && fix != "" {
			fmt.Fprintf(w, "      %-22s %s\n", "fix:", fix)
		}
	}
	release := fs.KernelRelease()
	newEnough := sysinfo.KernelAtLeast(release, sysinfo.MinKernel[0], sysinfo.MinKernel[1])
	line(newEnough, "kernel", fmt.Sprintf("Linux %s (6.2 or later: bpf_rdonly_cast)", release),
		"the programs cannot load; nothing can be captured", fixKernel)
	caps, err := fs.EffectiveCaps("self")
	canTrace := err == nil && sysinfo.CanTrace(caps)
	line(canTrace, "privileges", fmt.Sprintf("uid %d, CapEff %016x", os.Geteuid(), caps),
		"run as root or with CAP_BPF and CAP_PERFMON; nothing can be captured", fixPrivileges)
	if canTrace {
		line(fs.KernelSymbolsVisible(), "kernel symbols", "/proc/kallsyms addresses",
			"kernel stacks are not named: waits are told apart by their syscall alone", fixSymbols)
	}
	line(fs.HasBTF(), "BTF", "/sys/kernel/btf/vmlinux", "CO-RE programs cannot load; nothing can be captured", fixBTF)
	probeFix := fixKernel // without the privileges, the kernel refuses the probes themselves
	if !canTrace {
		probeFix = "the privileges above: the kernel refuses this probe without them"
	}
	line(features.HaveMapType(ebpf.RingBuf) == nil, "ring buffer", "BPF_MAP_TYPE_RINGBUF", "events cannot be delivered", probeFix)
	line(features.HaveProgramType(ebpf.RawTracepoint) == nil, "raw_tp programs", "BPF_PROG_TYPE_RAW_TRACEPOINT", "", probeFix)

	spec, err := btf.LoadKernelSpec()
	for _, tp := range capture.Tracepoints() {
		ok := false
		if err == nil {
			var typ *btf.Typedef
			ok = spec.TypeByName("btf_trace_"+tp, &typ) == nil
		}
		line(ok, "tracepoint", tp, "events from "+tp+" will be missing", tracepointFix(tp))
	}
	loaded := false
	if canTrace {
		eng, err := capture.Open(capture.Options{})
		if err != nil {
			fix := "WHYSLOW_DEBUG=1 whyslow check prints the verifier's log; a locked-down kernel refuses too: cat /sys/kernel/security/lockdown"
			if !newEnough {
				fix = fixKernel
			}
			line(false, "load and attach", firstLine(err), "capture cannot start", fix)
		} else {
			loaded = true
			line(true, "load and attach", "all programs verified and attached ("+eng.Flavour()+")", "", "")
			for _, m := range eng.Missing() {
				line(false, "attach", m, "events from "+m+" will be missing", tracepointFix(m))
			}
			eng.Close()
		}
	}
	line(fs.TracefsMounted(), "tracefs", "/sys/kernel/tracing (not needed: tp_btf and raw_tp attach without it)", "", fixTracefs)
	line(fs.HasPSI(), "PSI", "/proc/pressure (pressure stall information; watch --psi needs it)", "", fixPSI)
	line(fs.DelayAccounting() == "on", "delay accounting", "kernel.task_delayacct = "+fs.DelayAccounting()+" (not needed by capture)", "", fixDelayacct)
	line(true, "cgroup", cgroupWords(fs), "", "")
	fmt.Fprintf(w, "\ncapture: %s\n", captureWords(fs, canTrace && loaded))
	return missing
}

// captureWords says which capture run, attach and record use by default
// (--sampler auto), and why.
func captureWords(fs sysinfo.FS, loaded bool) string {
	if loaded {
		return "eBPF (run, attach and record trace; --sampler proc samples /proc instead)"
	}
	why := bpfMissing(fs)
	if why == "" {
		why = "the kernel refused the programs (load and attach above)"
	}
	return fmt.Sprintf("sampled from /proc at %d Hz, because %s: shares of wall time with error bounds; no waker, no path across processes, no requests (README, \"Without eBPF\")",
		procsample.DefaultHz, why)
}

func firstLine(err error) string {
	s := err.Error()
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// cgroupWords: "v1; controllers on v1: cpu, memory, blkio; on v2: none":
// which limits whyslow can name (a CPU quota needs cpu, re-reads memory).
func cgroupWords(fs sysinfo.FS) string {
	v1, v2 := fs.CgroupControllers()
	list := func(c []string) string {
		if len(c) == 0 {
			return "none"
		}
		return strings.Join(c, ", ")
	}
	s := fs.CgroupVersion()
	if len(v1) > 0 {
		s += "; controllers on v1: " + list(v1)
	}
	return s + "; on v2: " + list(v2)
}
