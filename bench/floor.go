package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/whyslow/whyslow/internal/capture"
)

// The floor (issue 29): on the tracepoints a level of whyslow attaches,
// programs that return at once. What they cost is what any eBPF tool pays on
// those points, before doing anything; what whyslow costs above it is what
// whyslow can remove. The programs are raw_tp ones, whyslow's fallback
// flavour: a tp_btf program is entered the same way (both are called from the
// tracepoint with the raw arguments), so the floor is the same.

// floorOptions are the capture options of a level, by name.
func floorOptions(level string) (capture.Options, error) {
	switch level {
	case "default":
		return capture.Options{}, nil
	case "syscalls":
		return capture.Options{Level: capture.Syscalls}, nil
	case "full":
		return capture.Options{Level: capture.Full}, nil
	case "requests":
		return capture.Options{Requests: true}, nil
	}
	return capture.Options{}, fmt.Errorf("no level %q: default, syscalls, full or requests", level)
}

// attachFloor attaches a program that returns at once to each point, and
// returns what detaches them. A point this kernel lacks is left out, as
// whyslow leaves it out.
func attachFloor(points []string) (func(), error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "floor", Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return nil, fmt.Errorf("loading the floor's program: %w", err)
	}
	var links []link.Link
	done := func() {
		for _, l := range links {
			l.Close()
		}
		prog.Close()
	}
	for _, p := range points {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: p, Program: prog})
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			done()
			return nil, fmt.Errorf("attaching the floor to %s: %w", p, err)
		}
		links = append(links, l)
	}
	return done, nil
}

// runOnFloor is the bench's -floor mode: a command run with the floor of a
// level attached, its output passed through, its exit status returned.
func runOnFloor(level string, argv []string) int {
	opts, err := floorOptions(level)
	if err == nil && len(argv) == 0 {
		err = errors.New("-floor needs a command")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	detach, err := attachFloor(capture.AttachPoints(opts))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer detach()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}
