package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

func newCheck() *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Say what capture needs and whether this machine has it",
		Long: `Prints one line per requirement of capture and whether this machine has it.
Exits 0 when full capture works, 4 when capture is impossible or degraded,
with one sentence per missing piece saying what will be missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if degraded := runCheck(cmd.OutOrStdout(), sysinfo.Host); degraded > 0 {
				return withCode(ExitNoCapture, fmt.Errorf("%d requirement(s) missing: capture is degraded or impossible", degraded))
			}
			return nil
		},
	}
}

// runCheck prints the checks and returns how many requirements are missing.
func runCheck(w io.Writer, fs sysinfo.FS) int {
	missing := 0
	line := func(ok bool, what, detail, ifMissing string) {
		mark := "ok  "
		if !ok {
			mark = "MISS"
			if ifMissing != "" {
				missing++
				detail += ": " + ifMissing
			}
		}
		fmt.Fprintf(w, "%s  %-22s %s\n", mark, what, detail)
	}
	caps, err := fs.EffectiveCaps("self")
	canTrace := err == nil && sysinfo.CanTrace(caps)
	line(canTrace, "privileges", fmt.Sprintf("uid %d, CapEff %016x", os.Geteuid(), caps),
		"run as root or with CAP_BPF and CAP_PERFMON; nothing can be captured")
	line(fs.HasBTF(), "BTF", "/sys/kernel/btf/vmlinux", "CO-RE programs cannot load; nothing can be captured")
	line(features.HaveMapType(ebpf.RingBuf) == nil, "ring buffer", "BPF_MAP_TYPE_RINGBUF", "events cannot be delivered")
	line(features.HaveProgramType(ebpf.RawTracepoint) == nil, "raw_tp programs", "BPF_PROG_TYPE_RAW_TRACEPOINT", "")

	spec, err := btf.LoadKernelSpec()
	for _, tp := range capture.Tracepoints() {
		ok := false
		if err == nil {
			var typ *btf.Typedef
			ok = spec.TypeByName("btf_trace_"+tp, &typ) == nil
		}
		line(ok, "tracepoint", tp, "events from "+tp+" will be missing")
	}
	if canTrace {
		eng, err := capture.Open(capture.Options{})
		if err != nil {
			line(false, "load and attach", firstLine(err), "capture cannot start")
		} else {
			line(true, "load and attach", "all programs verified and attached ("+eng.Flavour()+")", "")
			for _, m := range eng.Missing() {
				line(false, "attach", m, "events from "+m+" will be missing")
			}
			eng.Close()
		}
	}
	line(fs.TracefsMounted(), "tracefs", "/sys/kernel/tracing (not needed: tp_btf and raw_tp attach without it)", "")
	line(fs.HasPSI(), "PSI", "/proc/pressure (pressure stall information)", "")
	line(fs.DelayAccounting() == "on", "delay accounting", "kernel.task_delayacct = "+fs.DelayAccounting()+" (not needed by capture)", "")
	line(true, "cgroup", fs.CgroupVersion(), "")
	return missing
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
