package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/recorder"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// The --sampler values: which capture run, attach and record use.
const (
	samplerAuto = "auto" // eBPF when it can load, else /proc
	samplerBPF  = "bpf"
	samplerProc = "proc"
)

// captureChoice is the capture a command uses, and why.
type captureChoice struct {
	sampled bool
	why     string // for the sampled capture: what BPF lacks, or that it was asked for
	auto    bool   // chosen by --sampler auto: a BPF capture that fails to load falls back
	canFall bool   // and no flag only BPF serves was given
	hz      int
}

// bpfMissing says why the BPF capture cannot load on this machine, ""
// when nothing known stops it (the kernel may still refuse a program:
// Record's error says so then). Cheap: files only, no BPF syscall.
func bpfMissing(fs sysinfo.FS) string {
	release := fs.KernelRelease()
	caps, err := fs.EffectiveCaps("self")
	switch {
	case err != nil || !sysinfo.CanTrace(caps):
		return fmt.Sprintf("no CAP_BPF and CAP_PERFMON (CapEff %016x)", caps)
	case !sysinfo.KernelAtLeast(release, sysinfo.MinKernel[0], sysinfo.MinKernel[1]):
		return fmt.Sprintf("Linux %s is older than %d.%d", release, sysinfo.MinKernel[0], sysinfo.MinKernel[1])
	case !fs.HasBTF():
		return "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
	case fs.Lockdown() == "confidentiality":
		return "the kernel is locked down (confidentiality)"
	}
	return ""
}

// choose picks the capture by --sampler; flags only BPF gives refuse the
// sampled one.
func (c *captureFlags) choose() (captureChoice, error) {
	ch := captureChoice{hz: c.hz}
	if c.hz < 1 || c.hz > 1000 {
		return ch, usageErr("--hz must be from 1 to 1000, got %d", c.hz)
	}
	switch c.sampler {
	case samplerBPF:
		return ch, needPrivileges()
	case samplerProc:
		ch.sampled, ch.why = true, "--sampler proc"
	case samplerAuto:
		ch.auto, ch.canFall = true, c.bpfOnly() == ""
		if why := bpfMissing(sysinfo.Host); why != "" {
			ch.sampled, ch.why = true, why
		}
	default:
		return ch, usageErr("--sampler must be auto, bpf or proc, got %q", c.sampler)
	}
	if ch.sampled {
		if only := c.bpfOnly(); only != "" {
			if c.sampler == samplerProc {
				return ch, usageErr("%s needs the eBPF capture: the sampled one reads /proc (drop %s, or --sampler bpf)", only, only)
			}
			return ch, withCode(ExitNoCapture, fmt.Errorf("%s needs the eBPF capture, and it cannot load here: %s; run 'whyslow check' for details", only, ch.why))
		}
	}
	return ch, nil
}

// bpfOnly names a flag given that only the BPF capture serves, "" none.
func (c *captureFlags) bpfOnly() string {
	switch {
	case c.full:
		return "--full"
	case c.syscalls:
		return "--syscalls"
	case c.requests:
		return "--requests"
	}
	return ""
}

// say is the one line on stderr that says the sampled capture is used.
func (ch captureChoice) say() {
	if ch.why == "--sampler proc" {
		fmt.Fprintf(os.Stderr, "whyslow: sampling /proc at %d Hz, not tracing (--sampler proc)\n", ch.hz)
		return
	}
	fmt.Fprintf(os.Stderr, "whyslow: sampling /proc at %d Hz, not tracing (eBPF cannot load: %s)\n", ch.hz, format.Safe(ch.why))
}

// fallBack: auto chose BPF, and the kernel refused it.
func (ch *captureChoice) fallBack(err error) {
	ch.sampled = true
	ch.why = strings.SplitN(err.Error(), "\n", 2)[0]
	ch.say()
}

// record records with the chosen capture: the sampled one, or BPF, which
// falls back to the sampled one under --sampler auto when the kernel
// refuses it at load (nothing of the target has run then).
func record(ctx context.Context, cfg recorder.Config, ch *captureChoice) (*recorder.Result, error) {
	if ch.sampled {
		ch.say()
		return recorder.RecordSampled(ctx, cfg, ch.hz)
	}
	res, err := recorder.Record(ctx, cfg)
	var refused recorder.StartError
	if res == nil && ch.auto && ch.canFall && errors.As(err, &refused) {
		ch.fallBack(err)
		return recorder.RecordSampled(ctx, cfg, ch.hz)
	}
	return res, err
}
