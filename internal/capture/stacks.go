package capture

import (
	"bufio"
	"bytes"
	"cmp"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
)

// stacks symbolises kernel stacks by id (once each) and classifies off-CPU
// intervals with them.
type stacks struct {
	m       *ebpf.Map
	syms    *kallsyms
	frames  map[int32][]string
	sockets map[uint32]bool // processes seen using network sockets
}

func newStacks(m *ebpf.Map) *stacks {
	return &stacks{m: m, syms: loadKallsyms(), frames: make(map[int32][]string), sockets: make(map[uint32]bool)}
}

func (s *stacks) noteFile(pid uint32, f event.FileRef) {
	if f.Kind == event.KindSocketInet {
		s.sockets[pid] = true
	}
}

// stackDepth is STACK_DEPTH in bpf/whyslow.h: the stacks map's value is that
// many addresses.
const stackDepth = 20

// Frames returns the symbolised stack for an id, innermost first.
func (s *stacks) Frames(id int32) []string {
	if id < 0 {
		return nil
	}
	if f, ok := s.frames[id]; ok {
		return f
	}
	var ips [stackDepth]uint64
	var frames []string
	if err := s.m.Lookup(uint32(id), &ips); err == nil {
		for _, ip := range ips {
			if ip == 0 {
				break
			}
			frames = append(frames, s.syms.name(ip))
		}
	}
	s.frames[id] = frames
	return frames
}

func (s *stacks) classify(o *event.OffCPU) {
	o.Reason = classify.Reason(classify.Input{State: o.State, Syscall: o.Syscall, Frames: s.Frames(o.StackID),
		PollOnSockets: s.sockets[o.PID], FileKind: o.FileKind})
	o.Stack = s.Frames(o.StackID)
}

// sampled names a CPU sample's stack and tells user mode from kernel mode:
// interrupted in user mode, the kernel stack ends at the interrupt's entry.
func (s *stacks) sampled(v *event.Sample) {
	v.Stack = s.Frames(v.StackID)
	v.User = v.Syscall < 0 && (len(v.Stack) == 0 || strings.HasPrefix(v.Stack[len(v.Stack)-1], "asm_sysvec_"))
}

// kallsyms maps kernel addresses to function names.
type kallsyms struct {
	addrs []uint64
	names []string
}

var (
	kallsymsOnce sync.Once
	kallsymsVal  *kallsyms
)

func loadKallsyms() *kallsyms {
	kallsymsOnce.Do(func() {
		k := &kallsyms{}
		f, err := os.Open("/proc/kallsyms")
		if err == nil {
			defer f.Close()
			type sym struct {
				a uint64
				n string
			}
			all := make([]sym, 0, 1<<17)
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
			for sc.Scan() {
				// "ffffffff81000000 T _stext\t[module]": fixed columns, parsed
				// by hand (strings.Fields on 200k lines cost 100 ms of start-up).
				line := sc.Bytes()
				sp := bytes.IndexByte(line, ' ')
				if sp < 0 || len(line) < sp+4 {
					continue
				}
				switch line[sp+1] {
				case 't', 'T', 'w', 'W':
				default:
					continue
				}
				a, err := strconv.ParseUint(string(line[:sp]), 16, 64)
				if err != nil || a == 0 {
					continue
				}
				name := line[sp+3:]
				if end := bytes.IndexAny(name, " \t"); end >= 0 {
					name = name[:end]
				}
				all = append(all, sym{a, string(name)})
			}
			byAddr := func(x, y sym) int { return cmp.Compare(x.a, y.a) }
			if !slices.IsSortedFunc(all, byAddr) { // the kernel's own symbols come sorted
				slices.SortFunc(all, byAddr)
			}
			k.addrs = make([]uint64, len(all))
			k.names = make([]string, len(all))
			for i, s := range all {
				k.addrs[i], k.names[i] = s.a, s.n
			}
		}
		kallsymsVal = k
	})
	return kallsymsVal
}

func (k *kallsyms) name(ip uint64) string {
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > ip }) - 1
	if i < 0 {
		return "0x" + strconv.FormatUint(ip, 16)
	}
	return k.names[i]
}
