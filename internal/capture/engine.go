// Package capture loads whyslow's BPF programs, attaches them to tracepoints
// (tp_btf, or raw_tp where tp_btf is refused) and turns what they report into
// domain events.
package capture

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// Level is how much the engine streams.
type Level int

const (
	// Default hooks no syscall: the evidence is gathered where waiting
	// happens. At each context switch of a target thread the syscall and
	// file it waits in are read from its saved registers (a syscalls row per
	// wait, blocked = BlockedWait); block I/O, page dirtying, writeback,
	// dirty throttling, io_uring and the scheduler are traced as at every
	// level. Calls that never wait are not seen: their counts and bytes need
	// Syscalls.
	Default Level = iota
	// Syscalls hooks every syscall's entry and exit: fast, non-blocking I/O
	// calls are aggregated in the kernel, and calls that block, are slow,
	// fail, or open/close/sync are streamed.
	Syscalls
	// Full streams every I/O syscall, like an LTTng recording.
	Full
)

// String names the level as the recording's meta table does.
func (l Level) String() string {
	switch l {
	case Syscalls:
		return "syscalls"
	case Full:
		return "full"
	}
	return "waits"
}

// Hooks says whether the per-call hooks are loaded: at Syscalls and Full,
// and at any level when requests are cut from socket calls.
func (o Options) Hooks() bool { return o.Level != Default || o.Requests }

// ShortWait is the default level's threshold: a wait shorter than it, and
// not uninterruptible, is summed into a run of its thread's short waits
// alike (bpf/sched.bpf.h) rather than sent alone. Every wait that matters
// to a verdict is longer, or uninterruptible.
const ShortWait = time.Millisecond

// RunBelow is the capture's threshold for runs of short waits: ShortWait at
// the default level, 0 (every wait sent) where each wait is wanted on its
// own: --full, and --requests, whose requests are cut at waits.
func (o Options) RunBelow() time.Duration {
	if o.Level != Default || o.Requests || o.EveryWait {
		return 0
	}
	return ShortWait
}

// Options say what to capture. The zero value is a default-level, targeted capture.
type Options struct {
	Level      Level
	SystemWide bool
	// NoPeers: do not follow the processes outside the target that it waits
	// on (peers.bpf.h); system-wide, every process is followed anyway.
	NoPeers bool
	// Slow is the default level's streaming threshold for a syscall (1ms when zero).
	Slow time.Duration
	// EventsRingBytes sizes the main ring buffer (16 MiB when zero); a power of two, at least a page.
	EventsRingBytes int
	// CallsRingBytes is what the per-call hooks' rings (one per CPU) hold
	// together (EventsRingBytes when zero); a power of two.
	CallsRingBytes int
	// MetaRingBytes sizes the ring buffer for files, lifecycle and writeback (4 MiB when zero).
	MetaRingBytes int
	// DescribedFiles sizes the kernel's table of files already described
	// (65,536 when zero): a file is described once while it is in the table.
	// A live view, which keeps the names in memory rather than in a
	// recording, sizes it to what it keeps (LiveDescribedFiles).
	DescribedFiles int
	// Flavour forces "tp_btf" or "raw_tp"; empty probes tp_btf first.
	Flavour string
	// Requests streams every socket call of the target, so that requests can
	// be cut from them; Payload also takes each request's first bytes (an
	// HTTP request line, its label).
	Requests, Payload bool
	// SpoolDir, when set, makes the busy ring buffer's reader copy records
	// to an unlinked file there, decoded behind it: the ring is drained at
	// the speed of a copy, not of the store (Full uses it).
	SpoolDir string
	// EveryWait sends every wait on its own at the default level, as
	// --full and --requests do: no runs of short waits (RunBelow).
	EveryWait bool
	// checkRuns, tests only: each wait summed in a run is also sent on its
	// own, with Waits 0, and a run's Waits carries runMark (bpf/sched.bpf.h,
	// check_runs).
	checkRuns bool
	// describeHold, tests only: each description of a target's file is held
	// open this long, so that the timer tick's sampler runs inside it.
	describeHold time.Duration
	// spoolCopy, benchmarks only: every record the spool takes is also
	// written here, as the spool holds it, to be replayed (replay).
	spoolCopy io.Writer
	// stackBuckets, tests only: the stacks map's size (0: as compiled),
	// small enough for stacks to collide on demand.
	stackBuckets uint32
}

// Kept is what a capture keeps of a server's reads on its connections
// (event.PayloadKept, note_request): the first bytes of each turn, of each
// later read of a turn, and the most of a long read that begins one; all 0
// when it keeps none (no --requests, or --no-payload).
func (o Options) Kept() (turn, read, batch int) {
	if !o.Requests || !o.Payload {
		return 0, 0, 0
	}
	return PayloadLen, event.PayloadHeadLen, PayloadBatchLen
}

// LiveDescribedFiles is the kernel's table of described files for the live
// views (top, exporter, watch), and the number of file names they keep:
// with the default 65,536, a machine that starts 20 processes a second
// (~60 new /proc files a second) filled it in half an hour, the views'
// memory growing all along. What a view forgets it takes out of the
// kernel's table (Undescribe), so a file is described again when next met,
// never known by its inode only; one the kernel's table evicts first is
// described again, a few µs.
const LiveDescribedFiles = 16384

// Engine is a loaded and attached set of programs.
type Engine struct {
	opts Options
	coll *ebpf.Collection // the programs, chosen by name (attach)
	// sites guards coll against markGenericSites (sites.go), which writes
	// into it once kallsyms is read: after Close it writes nothing.
	sites struct {
		sync.Mutex
		closed bool
	}
	maps  whyslowMaps
	links []link.Link
	// detachOnce: the links are closed once, when Run's context ends or
	// at Close
	detachOnce sync.Once
	events     *ring
	meta       *ring
	callMaps   []*ebpf.Map // the rings of calls, one per CPU (per-call hooks only)
	calls      []*ring
	flavour    string
	missing    []string // tracepoints that could not be attached
	resolver   *resolver
	cpuSeen    cpuAccount // on-CPU ns already reported, per thread
	existing   existing   // threads found waiting at attach
	// targetDirtied: a drain saw pages the target dirtied.
	targetDirtied atomic.Bool
	// ownStacks: the frames of stacks sent whole (ownStack), by id.
	ownStacks sync.Map
	// undecodable counts ring records that did not decode: lost like the
	// kernel's, but in user space (LostDecode).
	undecodable atomic.Uint64
	// slotRaces counts slots taken out that a new life had taken, and that
	// could not be put back (LostCPUSlot).
	slotRaces atomic.Uint64
	// spooling is the spool while Run fills it (Held); heldMost the most
	// it held at once (HeldMost).
	spooling atomic.Pointer[spool]
	heldMost atomic.Int64
	// limits: the cgroup limits that may have held targets up (limits.go).
	limits limits
}

// tracepoints lists every handler by its program suffix and tracepoint name.
var tracepoints = []struct{ prog, tp string }{
	{"sys_enter", "sys_enter"},
	{"sys_exit", "sys_exit"},
	{"sched_switch", "sched_switch"},
	{"local_timer_entry", "local_timer_entry"}, // x86: CPU samples at the tick
	{"local_timer_exit", "local_timer_exit"},   // x86: wakeups inside the timer interrupt are the timer's
	{"sched_waking", "sched_waking"},
	{"sched_wakeup_new", "sched_wakeup_new"},
	{"task_rename", "task_rename"},
	{"sched_process_fork", "sched_process_fork"},
	{"sched_process_exec", "sched_process_exec"},
	{"sched_process_exit", "sched_process_exit"},
	{"block_rq_insert", "block_rq_insert"},
	{"block_rq_issue", "block_rq_issue"},
	{"block_rq_merge", "block_rq_merge"}, // a request merged away: its entry finished
	{"block_rq_complete", "block_rq_complete"},
	{"writeback_dirty_folio", "writeback_dirty_folio"},
	{"balance_dirty_pages", "balance_dirty_pages"},
	{"wb_inode_start", "writeback_single_inode_start"},
	{"wb_inode", "writeback_single_inode"},
	{"uring_submit", "io_uring_submit_req"},
	{"uring_complete", "io_uring_complete"},
	{"sock_state", "inet_sock_set_state"}, // which end of a TCP connection connected (peers.bpf.h)
	{"tcp_probe", "tcp_probe"},            // when a request's bytes arrived (arrival.bpf.h)
}

// perCall are the handlers that run on every syscall: loaded only when
// Options.Hooks says so, because the tracepoints alone cost a syscall-heavy
// program about 5% of its throughput.
var perCall = map[string]bool{"sys_enter": true, "sys_exit": true}

// perSegment are the handlers that run on every TCP segment received:
// loaded only for requests, whose arrival they time.
var perSegment = map[string]bool{"tcp_probe": true}

// attaches says whether a capture with these options attaches the handler
// prog: the per-call and per-segment ones only when asked.
func (o Options) attaches(prog string) bool {
	return !(perCall[prog] && !o.Hooks() || perSegment[prog] && !o.Requests)
}

// AttachPoints names the tracepoints a capture with these options attaches:
// what a floor (programs that return at once on the same points, the cost
// any eBPF tool pays there) must match, for the benchmarks.
func AttachPoints(o Options) []string {
	var out []string
	for _, t := range tracepoints {
		if o.attaches(t.prog) {
			out = append(out, t.tp)
		}
	}
	return out
}

// Tracepoints names every tracepoint the engine uses, for `whyslow check`.
func Tracepoints() []string {
	out := make([]string, len(tracepoints))
	for i, t := range tracepoints {
		out[i] = t.tp
	}
	return out
}

// Open loads and attaches the programs. Nothing is traced until targets are
// added (or SystemWide is set).
func Open(opts Options) (*Engine, error) {
	p, err := Prepare(opts)
	if err != nil {
		return nil, err
	}
	return p.Load()
}

// Prepared is the capture on its way into the kernel: its object parsed,
// its settings set, its maps made and the kernel's types decoded, the
// verifier still to come (Load). The verifier is most of a start's time,
// one CPU in the kernel while the other waits: what a caller starts
// between Prepare and Load (a recording created, a command started) runs
// beside it instead of before it.
type Prepared struct {
	opts    Options
	flavour string               // the flavour Load tries first
	spec    *ebpf.CollectionSpec // its object, set up for opts
	layout  mapLayout
	// maps are spec's maps, the sections of settings and globals too,
	// made while the kernel's types decoded (makeMaps); the programs'
	// collections take copies of them (MapReplacements).
	maps   *ebpf.Collection
	kernel *kernelTypes
	// restoreGC turns the collector back on (collectOnceWhileLoading),
	// once Load is done or Close called.
	restoreGC func()
	done      sync.Once
}

// Prepare does what loading the programs needs before the verifier: the
// object's parse and the maps' creation (~10 ms each) while the kernel's
// types decode. Load, or Close, must follow.
func Prepare(opts Options) (*Prepared, error) {
	p, err := prepare(opts)
	return p, permitted(err)
}

// permitted tells the kernel refusing the capture (ErrNotPermitted) apart.
func permitted(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: %w", ErrNotPermitted, err)
	}
	return err
}

// ErrNotPermitted is the kernel refusing to load or attach the programs: a
// missing capability, kernel lockdown, a security module. It is told apart
// from other permission errors (a file whyslow may not write), which are
// not a missing privilege of capture.
var ErrNotPermitted = errors.New("the kernel refused the capture")

func prepare(opts Options) (*Prepared, error) {
	p := &Prepared{opts: opts, flavour: "tp_btf", restoreGC: collectOnceWhileLoading()}
	if opts.Flavour != "" {
		p.flavour = opts.Flavour
	}
	go loadKallsyms() // needed at the first off-CPU event; read it meanwhile
	if err := rlimit.RemoveMemlock(); err != nil {
		p.Close()
		return nil, fmt.Errorf("removing memlock limit: %w", err)
	}
	p.kernel = newKernelTypes()
	var err error
	if p.spec, p.layout, err = setUp(opts, p.flavour); err != nil {
		p.Close()
		return nil, fmt.Errorf("%s: %w", p.flavour, err)
	}
	if p.maps, err = makeMaps(p.spec); err != nil {
		p.Close()
		return nil, err
	}
	// The verifier waits for the kernel's types: so does Prepare, so that
	// what the caller starts next runs beside the verifier, not beside them.
	p.kernel.wait()
	return p, nil
}

// Load verifies the programs, attaches them and maps the rings: the
// flavour asked, or tp_btf, then raw_tp where the kernel refuses tp_btf.
func (p *Prepared) Load() (*Engine, error) {
	defer p.Close()
	flavours := []string{p.flavour}
	if p.opts.Flavour == "" {
		flavours = append(flavours, "raw_tp")
	}
	var errs []error
	for _, fl := range flavours {
		e, err := p.load(fl)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", fl, err))
			continue
		}
		if err := e.mapRings(); err != nil {
			e.Close()
			return nil, err
		}
		return e, nil
	}
	return nil, permitted(errors.Join(errs...))
}

// load loads one flavour: the object Prepare set up and its maps, or, for
// the flavour tried after another failed, its own object and new maps
// (the first flavour's programs may have written into theirs).
func (p *Prepared) load(flavour string) (*Engine, error) {
	spec, layout, maps := p.spec, p.layout, p.maps
	p.spec, p.maps = nil, nil
	if spec == nil || flavour != p.flavour {
		closeMaps(maps)
		var err error
		if spec, layout, err = setUp(p.opts, flavour); err != nil {
			return nil, err
		}
		if maps, err = makeMaps(spec); err != nil {
			return nil, err
		}
	}
	kernel := p.kernel
	if kernel == nil {
		// A flavour tried after another failed decodes the kernel's types
		// again (~30 ms, rarely): nothing holds them while the programs
		// attach, and what loading left is collected meanwhile.
		kernel = newKernelTypes()
	}
	p.kernel = nil
	return open(p.opts, flavour, spec, layout, maps, kernel)
}

// Close gives back what Prepare made and Load did not take, and turns the
// collector back on. Load closes its Prepared; closing twice is harmless.
func (p *Prepared) Close() {
	p.done.Do(func() {
		closeMaps(p.maps)
		p.maps, p.spec, p.kernel = nil, nil, nil
		p.restoreGC()
	})
}

func closeMaps(maps *ebpf.Collection) {
	if maps != nil {
		maps.Close()
	}
}

// collectOnceWhileLoading turns Go's collector off while the programs load
// and returns what turns it back on. Loading makes ~15 MiB of garbage in
// a few tens of milliseconds (the object parsed, the kernel's types
// decoded, BTF marshalled for the kernel) and keeps under 1 MiB: collected
// as it went, that was three or four cycles, each with its assists and
// stops, while start-up waited. It is collected once instead, as the
// programs attach (open). The memory limit collects sooner if loading ever
// made far more.
func collectOnceWhileLoading() (restore func()) {
	limit := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(limit, loadingHeapLimit))
	percent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// loadingHeapLimit bounds Go's memory while the collector is off for loading.
const loadingHeapLimit = 64 << 20

// kernelTypes are the kernel's BTF, decoded while our object parses. One
// cache serves CO-RE relocations, tp_btf targets and kfuncs: without it the
// loader decodes the kernel's BTF a second time (~30 ms and ~20 MiB).
type kernelTypes struct {
	cache *btf.Cache
	spec  *btf.Spec
	ready chan struct{}
}

func newKernelTypes() *kernelTypes {
	k := &kernelTypes{cache: btf.NewCache(), ready: make(chan struct{})}
	go func() {
		k.spec, _ = k.cache.Kernel() // on error, the loader finds it itself and says why
		close(k.ready)
	}()
	return k
}

// wait returns the kernel's types once decoded (nil if they were not).
func (k *kernelTypes) wait() *btf.Spec {
	<-k.ready
	return k.spec
}

// mapLayout is what setUp decided of the maps that the engine needs again:
// the rings of calls are made after the programs load, one per CPU.
type mapLayout struct {
	callsInner *ebpf.MapSpec
	cpus       int
}

// setUp parses one flavour's object and sets it up for opts: which
// programs load, the settings, the maps' sizes.
func setUp(opts Options, flavour string) (*ebpf.CollectionSpec, mapLayout, error) {
	prefix, err := prefixOf(flavour)
	if err != nil {
		return nil, mapLayout{}, err
	}
	spec, err := loadFlavour(flavour)
	if err != nil {
		return nil, mapLayout{}, fmt.Errorf("loading BPF spec: %w", err)
	}
	for name := range spec.Programs {
		if len(name) < len(prefix) || name[:len(prefix)] != prefix || !opts.attaches(name[len(prefix):]) {
			delete(spec.Programs, name)
		}
	}
	slow := opts.Slow
	if slow == 0 {
		slow = time.Millisecond
	}
	// Settings through the generated specs: a setting renamed in C fails
	// to compile here, not at load time.
	var vars whyslowVariableSpecs
	if err := spec.Assign(&vars); err != nil {
		return nil, mapLayout{}, fmt.Errorf("finding settings in the BPF spec: %w", err)
	}
	for _, v := range []struct {
		spec  *ebpf.VariableSpec
		value any
	}{
		{vars.SystemWide, opts.SystemWide},
		// Peers: the processes outside the target it waits on (peers.bpf.h).
		{vars.FollowPeers, !opts.SystemWide && !opts.NoPeers},
		// A user task's wait begun before capture is noted from here.
		{vars.CaptureStartNs, monotonicNow()},
		{vars.Full, opts.Level == Full},
		{vars.SlowNs, uint64(slow)},
		{vars.SelfPid, uint32(os.Getpid())},
		{vars.ByRequest, opts.Requests},
		{vars.Payload, opts.Requests && opts.Payload},
		{vars.SyscallHooks, opts.Hooks()},
		{vars.AllStacks, opts.Level == Full},
		{vars.DescribeHoldNs, uint64(opts.describeHold)},
		{vars.RunBelowNs, uint64(opts.RunBelow())},
		{vars.CheckRuns, opts.checkRuns},
	} {
		if err := v.spec.Set(v.value); err != nil {
			return nil, mapLayout{}, fmt.Errorf("setting %s: %w", v.spec.Name, err)
		}
	}
	var mapSpecs whyslowMapSpecs
	if err := spec.Assign(&mapSpecs); err != nil {
		return nil, mapLayout{}, fmt.Errorf("finding maps in the BPF spec: %w", err)
	}
	sizeMaps(&mapSpecs, opts, sysinfo.Host.PIDMax())
	// The programs wake the reader when a ring is a quarter full.
	if err := vars.EventsWakeAt.Set(uint64(mapSpecs.Events.MaxEntries / 4)); err != nil {
		return nil, mapLayout{}, fmt.Errorf("setting events_wake_at: %w", err)
	}
	if err := vars.MetaWakeAt.Set(uint64(mapSpecs.Meta.MaxEntries / 4)); err != nil {
		return nil, mapLayout{}, fmt.Errorf("setting meta_wake_at: %w", err)
	}
	// The per-call hooks' syscall records go to a ring per CPU (calls),
	// together CallsRingBytes, or the size of the events ring.
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, mapLayout{}, fmt.Errorf("counting CPUs: %w", err)
	}
	callsTotal := mapSpecs.Events.MaxEntries
	if opts.CallsRingBytes > 0 {
		callsTotal = uint32(opts.CallsRingBytes)
	}
	callsRing := callsRingBytes(callsTotal, cpus)
	mapSpecs.Calls.MaxEntries = uint32(cpus)
	mapSpecs.Calls.InnerMap.MaxEntries = callsRing
	if err := vars.CallsWakeAt.Set(uint64(callsRing / 4)); err != nil {
		return nil, mapLayout{}, fmt.Errorf("setting calls_wake_at: %w", err)
	}
	return spec, mapLayout{callsInner: mapSpecs.Calls.InnerMap, cpus: cpus}, nil
}

// prefixOf is the prefix of a flavour's programs' names.
func prefixOf(flavour string) (string, error) {
	prefix := map[string]string{"tp_btf": "btf_", "raw_tp": "raw_"}[flavour]
	if prefix == "" {
		return "", fmt.Errorf("unknown flavour %q", flavour)
	}
	return prefix, nil
}

// makeMaps creates spec's maps, for the programs' collections to take
// (MapReplacements): they need nothing of the kernel's types, so they are
// made while those decode (~10 ms of the kernel's, mostly preallocating
// hash maps). A collection of maps alone: the sections of settings and
// globals (.rodata, .bss) are made and filled from the variables as the
// programs' own collection would, and every group of programs shares
// them.
func makeMaps(spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
	maps, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{
		Maps: spec.Maps, Variables: spec.Variables, Types: spec.Types, ByteOrder: spec.ByteOrder,
	}, ebpf.CollectionOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating maps: %w", err)
	}
	return maps, nil
}

// open loads one flavour's programs, spec set up by setUp, into its maps
// (made by makeMaps), and attaches them.
func open(opts Options, flavour string, spec *ebpf.CollectionSpec, layout mapLayout, made *ebpf.Collection, kernel *kernelTypes) (*Engine, error) {
	prefix, err := prefixOf(flavour)
	if err != nil {
		closeMaps(made)
		return nil, err
	}
	progs, err := loadPrograms(spec, made, kernel)
	if err != nil {
		closeMaps(made)
		return nil, err
	}
	coll := &ebpf.Collection{Programs: progs, Maps: made.Maps, Variables: made.Variables}
	// Loading left ~10 MiB of garbage (the parsed object, the kernel types
	// decoded for CO-RE, the BTF marshalled for the kernel) and under 1 MiB
	// live. Its pages go back to the system before the rings are mapped,
	// which a short run's peak is made of: collected while the programs
	// attach, which waits for RCU grace periods more than it computes.
	collected := make(chan struct{})
	go func() {
		debug.FreeOSMemory()
		close(collected)
	}()
	defer func() { <-collected }()
	// Every map is created whichever programs load, so the typed struct
	// takes them all (and the duty to close them). The programs stay in
	// coll, looked up by name: only one twin of each (btf_ or raw_) is
	// loaded, and whyslowPrograms would want both.
	var maps whyslowMaps
	if err := coll.Assign(&maps); err != nil {
		coll.Close() // a failed Assign leaves every map in coll
		return nil, fmt.Errorf("assigning maps: %w", err)
	}
	e := &Engine{opts: opts, coll: coll, maps: maps, flavour: flavour, resolver: newResolver(sysinfo.Host)}
	if opts.Hooks() {
		// Without the hooks the slots stay empty: nothing writes there.
		if err := e.makeCallRings(layout.callsInner, layout.cpus); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := e.attach(prefix); err != nil {
		e.Close()
		return nil, err
	}
	// kallsyms, read since Open began (loadKallsyms), may still be on its
	// way: the kernel side reuses no stack until told (sites_told). Told
	// once loading's garbage is collected: the pages of kallsyms it reads
	// (~4 MiB of the copy mapped) are not in memory beside that garbage.
	go func() {
		<-collected
		e.markGenericSites(loadKallsyms)
	}()
	return e, nil
}

// loadPrograms has the kernel verify spec's programs, into the maps made
// for them, on two threads where there are two CPUs or more: the verifier
// is most of a start's time, and runs on the thread that loads. Each
// thread takes the largest program left (by instructions), so that the
// largest (sched_switch, about half the verifier's time) runs beside the
// others rather than after them: 42 ms against 61 one after the other on
// two CPUs (medians of 11, a quiet host).
func loadPrograms(spec *ebpf.CollectionSpec, maps *ebpf.Collection, kernel *kernelTypes) (map[string]*ebpf.Program, error) {
	names := make([]string, 0, len(spec.Programs))
	for name := range spec.Programs {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(len(spec.Programs[b].Instructions), len(spec.Programs[a].Instructions)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	next := make(chan string, len(names))
	for _, name := range names {
		next <- name
	}
	close(next)
	types := kernel.wait()
	var mu sync.Mutex
	progs := map[string]*ebpf.Program{}
	var errs []error
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 2) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				p, err := loadProgram(spec, name, maps, types, kernel.cache)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					progs[name] = p
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		for _, p := range progs {
			p.Close()
		}
		return nil, errors.Join(errs...)
	}
	return progs, nil
}

// loadProgram loads one of spec's programs into maps: a collection of the
// one program, which takes copies of the maps (MapReplacements) and shares
// the kernel's types (cache). spec's maps and types are only read: the
// collection copies what it changes, and loads run at once.
func loadProgram(spec *ebpf.CollectionSpec, name string, maps *ebpf.Collection, types *btf.Spec, cache *btf.Cache) (*ebpf.Program, error) {
	coll, err := ebpf.NewCollectionWithOptions(&ebpf.CollectionSpec{
		Maps: spec.Maps, Programs: map[string]*ebpf.ProgramSpec{name: spec.Programs[name]}, Types: spec.Types, ByteOrder: spec.ByteOrder,
	}, ebpf.CollectionOptions{
		MapReplacements: maps.Maps,
		Programs:        ebpf.ProgramOptions{KernelTypes: types},
		Cache:           cache,
	})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading programs: %+v", ve)
		}
		return nil, fmt.Errorf("loading programs: %w", err)
	}
	defer coll.Close() // its copies of the maps
	return coll.DetachProgram(name), nil
}

// loadFlavour parses the object of one flavour's programs: each is an
// object of its own (gen.go), with the same maps, settings and types, so
// the typed structs of the first serve both.
func loadFlavour(flavour string) (*ebpf.CollectionSpec, error) {
	if flavour == "raw_tp" {
		return loadWhyslowRaw()
	}
	return loadWhyslow()
}

// callsRingBytes sizes each CPU's ring of calls: their total shared out,
// a power of two, at least 1 MiB (~7000 records, 7 ms of one CPU's calls
// at full rate) unless the total is smaller (tests).
func callsRingBytes(total uint32, cpus int) uint32 {
	size := uint32(1 << 20)
	if total < size {
		return total
	}
	for size*2*uint32(cpus) <= total {
		size *= 2
	}
	return size
}

// makeCallRings creates a ring of calls per CPU and puts each in its slot.
func (e *Engine) makeCallRings(spec *ebpf.MapSpec, cpus int) error {
	for cpu := range cpus {
		m, err := ebpf.NewMap(spec)
		if err != nil {
			return fmt.Errorf("creating the ring of calls of CPU %d: %w", cpu, err)
		}
		e.callMaps = append(e.callMaps, m)
		if err := e.maps.Calls.Put(uint32(cpu), m); err != nil {
			return fmt.Errorf("setting the ring of calls of CPU %d: %w", cpu, err)
		}
	}
	return nil
}

// mapRings maps both ring buffers into whyslow. The kernel maps every page
// at once: the rings' size is in whyslow's resident set from the start,
// 8 MiB at the default level.
func (e *Engine) mapRings() error {
	var err error
	if e.events, err = newRing(e.maps.Events); err != nil {
		return fmt.Errorf("opening events ring buffer: %w", err)
	}
	if e.meta, err = newRing(e.maps.Meta); err != nil {
		return fmt.Errorf("opening meta ring buffer: %w", err)
	}
	for cpu, m := range e.callMaps {
		r, err := newRing(m)
		if err != nil {
			return fmt.Errorf("opening the ring of calls of CPU %d: %w", cpu, err)
		}
		e.calls = append(e.calls, r)
	}
	return nil
}

// attach links every program to its tracepoint. Attaching waits for an RCU
// grace period in the kernel; done one after another that was most of
// whyslow's start-up, so all attach at once and share the grace periods.
func (e *Engine) attach(prefix string) error {
	type result struct {
		tp  string
		l   link.Link
		err error
	}
	results := make(chan result, len(tracepoints))
	n := 0
	for _, t := range tracepoints {
		if !e.opts.attaches(t.prog) {
			continue
		}
		n++
		prog := e.coll.Programs[prefix+t.prog] // by name: the twin is chosen at run time
		if prog == nil {
			return fmt.Errorf("program %s%s missing from the object", prefix, t.prog)
		}
		go func(tp string, prog *ebpf.Program) {
			var l link.Link
			var err error
			if prefix == "btf_" {
				l, err = link.AttachTracing(link.TracingOptions{Program: prog})
			} else {
				l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
			}
			results <- result{tp, l, err}
		}(t.tp, prog)
	}
	var errs []error
	for range n {
		r := <-results
		switch {
		case errors.Is(r.err, os.ErrNotExist):
			// This kernel lacks the tracepoint: degrade and say so.
			e.missing = append(e.missing, r.tp)
		case r.err != nil:
			errs = append(errs, fmt.Errorf("attaching tracepoint %s: %w", r.tp, r.err))
		default:
			e.links = append(e.links, r.l)
		}
	}
	return errors.Join(errs...)
}

// Flavour says which program type was attached: tp_btf or raw_tp.
func (e *Engine) Flavour() string { return e.flavour }

// Missing lists tracepoints this kernel does not have.
func (e *Engine) Missing() []string { return e.missing }

// Undescribe takes a file out of the kernel's table of files already
// described: the next time the kernel meets it, it describes it again. A
// live view that forgets a file's name hands it here, so that it never
// meets the file again without its name.
func (e *Engine) Undescribe(r event.FileRef) {
	e.maps.Seen.Delete(whyslowSeenKey{Dev: r.Dev, Gen: r.Gen, Ino: r.Ino}) // gone already: nothing to do
}

// AddTarget adds a process (and, as they fork, its descendants) to the target set.
func (e *Engine) AddTarget(pid uint32) error {
	one := uint8(1)
	// Its filter slot first: the programs test the slot before the set.
	if err := e.maps.TargetSlots.Put(pid%uint32(e.maps.TargetSlots.MaxEntries()), one); err != nil {
		return fmt.Errorf("adding target %d: %w", pid, err)
	}
	if err := e.maps.Targets.Put(pid, one); err != nil {
		return fmt.Errorf("adding target %d: %w", pid, err)
	}
	return nil
}

// detach closes the programs' links: nothing is written to the rings or
// the maps after it. Detaching waits for RCU grace periods, as attaching
// does: all at once. Run detaches when its context ends, Close if Run did not.
func (e *Engine) detach() {
	e.detachOnce.Do(func() {
		var wg sync.WaitGroup
		for _, l := range e.links {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.Close()
			}()
		}
		wg.Wait()
	})
}

// Close detaches everything and frees the maps. Closing twice is harmless.
func (e *Engine) Close() error {
	e.detach()
	e.sites.Lock()
	e.sites.closed = true
	e.sites.Unlock()
	if e.events != nil {
		e.events.close()
		e.events = nil
	}
	if e.meta != nil {
		e.meta.close()
		e.meta = nil
	}
	for _, r := range e.calls {
		r.close()
	}
	e.calls = nil
	for _, m := range e.callMaps {
		m.Close()
	}
	e.callMaps = nil
	if e.coll != nil {
		e.coll.Close()
		e.coll = nil
	}
	e.maps.Close()
	e.maps = whyslowMaps{}
	return nil
}
