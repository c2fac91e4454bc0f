package capture

import (
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// stacks symbolises kernel stacks by id (once each) and classifies off-CPU
// intervals with them.
type stacks struct {
	m       *ebpf.Map
	sent    *sync.Map // id -> frames of the stacks sent whole, shared by the engine's readers
	syms    *sysinfo.Kallsyms
	frames  map[int32][]string
	sockets map[uint32]bool // processes seen using network sockets
	// reasons remembers each classification: the rules are matched
	// against every frame (up to 70 prefixes by 20 frames), the same few
	// stacks over and over.
	reasons map[reasonKey]event.Reason
	// owned is the ids of the last stacks sent whole, oldest first: sent
	// forgets those that fall out (an id is used by the events that follow
	// its stack, within moments).
	owned []int32
}

// The caches above are bounded for a capture that runs for days: new kernel
// stacks turn up all along (a timer sample can land anywhere), and the
// kernel's stack map alone has 65,536 ids. A full cache starts again: a
// stack is symbolised again from the map, a wait classified again.
const (
	maxCachedStacks = 8192
	maxReasons      = 8192
	maxOwned        = 8192
)

// reasonKey is everything classify.Reason reads, the stack by its id.
type reasonKey struct {
	stack, syscall int32
	state          byte
	pollOnSockets  bool
	fileKind       event.FileKind
	wakerKind      event.FileKind
	wakerSyscall   int32
	quota          bool
}

func newStacks(m *ebpf.Map, sent *sync.Map) *stacks {
	return &stacks{m: m, sent: sent, syms: loadKallsyms(), frames: make(map[int32][]string), sockets: make(map[uint32]bool),
		reasons: make(map[reasonKey]event.Reason)}
}

func (s *stacks) noteFile(pid uint32, f event.FileRef) {
	if f.Kind == event.KindSocketInet {
		s.sockets[pid] = true
	}
}

// exited forgets a process that exited: a system-wide capture meets
// processes without end.
func (s *stacks) exited(pid uint32) { delete(s.sockets, pid) }

// stackDepth is STACK_DEPTH in bpf/whyslow.h: the stacks map's value is that
// many addresses.
const stackDepth = 20

// stackOwnBase is STACK_OWN_BASE in bpf/whyslow.h: ids from it up are
// stacks sent whole (ownStack), below it buckets of the stacks map.
const stackOwnBase = 1 << 20

// ownStack is a stack the stacks map refused (its bucket held another
// stack), sent whole under an id of its own before any event names it. It
// is consumed by Run, never passed on.
type ownStack struct {
	event.Header
	ID  int32
	IPs []uint64
}

// own symbolises a stack sent whole.
func (s *stacks) own(v *ownStack) {
	frames := make([]string, 0, len(v.IPs))
	for _, ip := range v.IPs {
		if ip == 0 {
			break
		}
		frames = append(frames, s.syms.Name(ip))
	}
	s.remember(v.ID, frames)
	s.sent.Store(v.ID, frames) // for Waits, which reads no ring
	if len(s.owned) >= maxOwned {
		s.sent.Delete(s.owned[0])
		s.owned = s.owned[1:]
	}
	s.owned = append(s.owned, v.ID)
}

// remember caches a stack's frames, starting the cache again when full.
func (s *stacks) remember(id int32, frames []string) {
	if len(s.frames) >= maxCachedStacks {
		clear(s.frames)
	}
	s.frames[id] = frames
}

// Frames returns the symbolised stack for an id, innermost first.
func (s *stacks) Frames(id int32) []string {
	if id < 0 {
		return nil
	}
	if f, ok := s.frames[id]; ok {
		return f
	}
	if id >= stackOwnBase {
		f, _ := s.sent.Load(id)
		frames, _ := f.([]string)
		return frames // sent whole: known once Run has read it
	}
	var ips [stackDepth]uint64
	var frames []string
	if err := s.m.Lookup(uint32(id), &ips); err == nil {
		for _, ip := range ips {
			if ip == 0 {
				break
			}
			frames = append(frames, s.syms.Name(ip))
		}
	}
	s.remember(id, frames)
	return frames
}

func (s *stacks) classify(o *event.OffCPU) {
	o.Stack = s.Frames(o.StackID)
	in := classify.Input{State: o.State, Syscall: o.Syscall, Frames: o.Stack, PollOnSockets: s.sockets[o.PID], FileKind: o.FileKind,
		WakerKind: o.WakerFile.Kind, WakerSyscall: o.WakerSyscall, Quota: o.Quota}
	// Waits without a stack (no id) too: the rules and the syscall tables
	// were still walked for each.
	k := reasonKey{o.StackID, o.Syscall, o.State, in.PollOnSockets, o.FileKind, in.WakerKind, in.WakerSyscall, o.Quota}
	r, ok := s.reasons[k]
	if !ok {
		r = classify.Reason(in)
		if len(s.reasons) >= maxReasons {
			clear(s.reasons)
		}
		s.reasons[k] = r
	}
	o.Reason = r
}

// sampled names a CPU sample's stack and tells user mode from kernel mode:
// interrupted in user mode, the kernel stack ends at the interrupt's entry.
func (s *stacks) sampled(v *event.Sample) {
	v.Stack = s.Frames(v.StackID)
	v.User = v.Syscall < 0 && (len(v.Stack) == 0 || strings.HasPrefix(v.Stack[len(v.Stack)-1], "asm_sysvec_"))
}

var (
	kallsymsOnce sync.Once
	kallsymsVal  *sysinfo.Kallsyms
)

// loadKallsyms reads the kernel's symbols once per process: Open starts it
// early, so that the table is ready by the first stack to name.
func loadKallsyms() *sysinfo.Kallsyms {
	kallsymsOnce.Do(func() {
		k, _ := sysinfo.Host.CachedKallsyms(sysinfo.KallsymsCache)
		if k == nil { // unreadable: stacks show addresses
			k = &sysinfo.Kallsyms{}
		}
		kallsymsVal = k
	})
	return kallsymsVal
}
