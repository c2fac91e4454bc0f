package accuracy

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed prelude.py
var prelude string

// Text is the program as a Python script: a header saying what it was built
// to show, its constants, the prelude, a function per block, and main.
func (p *Program) Text(env *Env) string {
	var w strings.Builder
	fmt.Fprintf(&w, "# whyslow accuracy program, seed %d: built so that whyslow says %s.\n", p.Seed, p.Expected())
	for _, b := range p.Blocks {
		role := "minor"
		if b.Dominant {
			role = "DOMINANT"
		}
		fmt.Fprintf(&w, "#   %s %s: %s\n", b.Name, role, b.Describe())
	}
	w.WriteString("import mmap, os, select, socket, sys, threading, time, traceback\n\n")
	fmt.Fprintf(&w, "MiB = 1 << 20\nREAD_FILE = %q\nSCRATCH = %q\nTIMES = %q\n\n", env.ReadFile, env.Scratch, env.Times)
	w.WriteString(prelude)
	for _, b := range p.Blocks {
		w.WriteString("\n\n")
		if b.Kind.work != nil {
			function(&w, b.Name+"_work", b.Kind.work(b, env))
			w.WriteString("\n\n")
		}
		function(&w, b.Name, b.Kind.body(b, env))
	}
	w.WriteString("\n\n")
	function(&w, "main", p.mainBody())
	w.WriteString(`

if __name__ == '__main__':
    if sys.argv[1:2] == ['child']:  # an exec'd child: one block's work
        globals()[sys.argv[2]]()
    else:
        main()
`)
	return w.String()
}

// mainBody starts the minors that run beside the rest, runs the minors
// before the dominant block, the dominant block where it is placed, the
// minors after, and waits for those beside.
func (p *Program) mainBody() []string {
	body := []string{"threads, children = [], []"}
	timed := func(b *Block) string { return fmt.Sprintf("timed('%s', %s)", b.Name, b.Name) }
	for _, b := range p.Minors() {
		switch b.Place {
		case InThread:
			body = append(body, fmt.Sprintf("threads.append(in_thread('%s', %s))", b.Name, b.Name))
		case InChild:
			body = append(body, fmt.Sprintf("children.append(fork(lambda: %s))", timed(b)))
		}
	}
	for _, b := range p.Minors() {
		if b.Place == InMain && !b.After {
			body = append(body, timed(b))
		}
	}
	switch d := p.Dominant(); d.Place {
	case InMain:
		body = append(body, timed(d))
	case InThread:
		body = append(body, fmt.Sprintf("in_thread('%s', %s).join()", d.Name, d.Name))
	case InChild:
		body = append(body, fmt.Sprintf("wait_child(fork(lambda: %s))", timed(d)))
	}
	for _, b := range p.Minors() {
		if b.Place == InMain && b.After {
			body = append(body, timed(b))
		}
	}
	return append(body, "for t in threads:\n    t.join()", "for pid in children:\n    wait_child(pid)")
}

// function writes a Python function of no arguments with these lines (each
// may hold several, newline-separated) as its body.
func function(w *strings.Builder, name string, body []string) {
	fmt.Fprintf(w, "def %s():\n", name)
	for _, l := range lines(body...) {
		for _, line := range strings.Split(l, "\n") {
			w.WriteString("    " + line + "\n")
		}
	}
}

// lines drops the empty ones.
func lines(ls ...string) []string {
	var out []string
	for _, l := range ls {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func millis(s float64) int { return int(s*1000 + 0.5) }

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
