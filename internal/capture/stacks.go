package capture

import (
	"bufio"
	"os"
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
			var all []sym
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) < 3 || (fields[1] != "t" && fields[1] != "T" && fields[1] != "W" && fields[1] != "w") {
					continue
				}
				a, err := strconv.ParseUint(fields[0], 16, 64)
				if err != nil || a == 0 {
					continue
				}
				all = append(all, sym{a, fields[2]})
			}
			sort.Slice(all, func(i, j int) bool { return all[i].a < all[j].a })
			for _, s := range all {
				k.addrs = append(k.addrs, s.a)
				k.names = append(k.names, s.n)
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
