// Package procsample is the sampled capture: where BPF cannot load (no
// CAP_BPF/CAP_PERFMON, unprivileged_bpf_disabled, lockdown, an old kernel
// or one without BTF), it looks at every thread of the target in /proc at a
// fixed rate and hands each look on as an event.ProcSample: the facts
// classify names (classify.SampleReason), as it names a traced wait.
//
// A look tells a thread's state, syscall and that call's file, its wait
// channel (and stack, for root), and how its run delay grew; it cannot tell
// who ended a wait, the path across processes, or a request's bounds.
package procsample

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
	"golang.org/x/sys/unix"
)

// DefaultHz is the sampling rate without --hz: 50 ms between looks, fine
// enough for a cause that lasts half a second (10 samples), cheap enough
// for 1,000 threads (BENCHMARKS.md).
const DefaultHz = 20

// Options say what to sample.
type Options struct {
	Root string // the file system /proc is under: "/" (fixtures elsewhere)
	Hz   int
	PID  int // the target: this process, its threads and its descendants
	// Notify, if set, is told once of each thing the sampler could not read
	// (an unreadable stack), in one line.
	Notify func(string)
}

// Stats count what the looks found.
type Stats struct {
	Ticks   uint64 // looks at the target taken
	Samples uint64 // threads looked at, in all
	// Vanished counts threads that exited between being listed and read:
	// their look is dropped.
	Vanished uint64
	// NoStack: the kernel stacks were unreadable (no root): waits were told
	// by their syscall, file and wait channel.
	NoStack bool
	// Busiest is the most threads one tick looked at.
	Busiest int
}

// Sampler looks at the target's threads at each tick of its rate.
type Sampler struct {
	o      Options
	procs  map[int]*proc
	tick   uint64
	now    uint64
	buf    []byte
	stacks map[string]int32
	stats  Stats
	// cgroups are the CPU quotas by directory, memcgs the limited memory
	// cgroups by events file, byCgroups both by a thread's cgroup file's
	// text (groupsOf).
	cgroups   map[string]*quota
	memcgs    map[string]*memcg
	byCgroups map[string]*groups
	// discoverEvery: the process tree is read again at every tick while a
	// thread waits for a child (its children come and go), else once a
	// second: a walk of all of /proc at 20 Hz costs more than the looks.
	// rediscover: the path waited on a pipe whose writer was not found.
	childWait, rediscover bool
	lastTree              uint64
	// parents are the processes of the last listing of /proc, by pid:
	// their parents' (discover).
	parents map[int]int
	// released are held looks of threads gone, for the next batch.
	released []*event.ProcSample
}

// proc is one process of the target.
type proc struct {
	pid, ppid int
	comm      string
	tasks     map[int]*task
	sockets   sockets
	files     map[int32]linked // by fd: its link and what it is
	inet      struct {
		tick uint64
		has  bool
	}
	seen uint64 // the last tick it was found in the tree
	// taskDir is /proc/PID/task, kept open: its link count (2 + the count
	// of threads, proc_task_getattr) says when it must be listed again
	// (listed: the count at the last listing; relist: a thread's read
	// failed since). One fstat, where the process's stat line walks every
	// thread for its times.
	taskDir procFile
	listed  int
	relist  bool
}

// threads is the process's count of threads now, -1 when unreadable.
func (p *proc) threads(root string) int {
	if p.taskDir == 0 {
		f, err := openProcFile(filepath.Join(root, "proc", strconv.Itoa(p.pid), "task"))
		if err != nil {
			return -1
		}
		p.taskDir = f
	}
	var st unix.Stat_t
	if p.taskDir.fstat(&st) != nil || st.Nlink < 2 {
		return -1
	}
	return int(st.Nlink) - 2
}

// close closes the process's open files.
func (p *proc) close() {
	for _, t := range p.tasks {
		t.close()
	}
	p.taskDir.close()
}

type linked struct {
	link string
	file fileOf
}

// New checks that the target can be looked at.
func New(o Options) (*Sampler, error) {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Hz <= 0 {
		o.Hz = DefaultHz
	}
	if _, err := os.Stat(filepath.Join(o.Root, "proc", strconv.Itoa(o.PID), "task")); err != nil {
		return nil, fmt.Errorf("sampling pid %d: %w", o.PID, err)
	}
	return &Sampler{o: o, procs: map[int]*proc{}, buf: make([]byte, 8192), stacks: map[string]int32{},
		cgroups: map[string]*quota{}, memcgs: map[string]*memcg{}, byCgroups: map[string]*groups{}}, nil
}

// Stats says what the looks found so far.
func (s *Sampler) Stats() Stats { return s.stats }

// Interval is the time between two looks.
func (s *Sampler) Interval() time.Duration { return time.Second / time.Duration(s.o.Hz) }

// Run looks at the target at every tick until ctx ends or the target is
// gone, handing each tick's samples to sink.
func (s *Sampler) Run(ctx context.Context, sink func([]event.Event)) error {
	defer s.close()
	t := time.NewTicker(s.Interval())
	defer t.Stop()
	for {
		batch, alive := s.Tick()
		if len(batch) > 0 {
			sink(batch)
		}
		if !alive {
			s.releaseAll(sink)
			return nil
		}
		select {
		case <-ctx.Done():
			s.releaseAll(sink)
			return nil
		case <-t.C:
		}
	}
}

// releaseAll hands on every held look: the capture ends.
func (s *Sampler) releaseAll(sink func([]event.Event)) {
	for _, p := range s.procs {
		for _, t := range p.tasks {
			s.release(t)
		}
	}
	var batch []event.Event
	for _, sm := range s.released {
		batch = append(batch, sm)
	}
	s.released = nil
	if len(batch) > 0 {
		sink(batch)
	}
}

func (s *Sampler) close() {
	for _, p := range s.procs {
		p.close()
	}
	s.procs = map[int]*proc{}
	for _, m := range s.memcgs {
		m.f.close()
	}
	s.memcgs = map[string]*memcg{}
}

// Tick looks at every thread of the target once. alive is false once the
// target's main process is gone.
func (s *Sampler) Tick() (batch []event.Event, alive bool) {
	s.tick++
	s.now = monotonicNow()
	if s.tick == 1 || s.childWait || s.rediscover || s.tick-s.lastTree >= uint64(s.o.Hz) {
		s.discover()
	}
	s.rediscover = false
	looks := map[int][]*event.ProcSample{}
	childWait := false
	n := 0
	for _, p := range s.procs {
		out, looked := s.lookAt(p)
		for _, sm := range out {
			looks[p.pid] = append(looks[p.pid], sm)
			if sm.State != 'R' && isChildWait(sm.Syscall) {
				childWait = true
			}
		}
		n += looked
	}
	s.childWait = childWait
	if _, ok := s.procs[s.o.PID]; !ok || len(looks[s.o.PID]) == 0 {
		return nil, false
	}
	s.stats.Ticks++
	s.stats.Samples += uint64(n)
	s.stats.Busiest = max(s.stats.Busiest, n)
	s.markPath(looks)
	for _, sm := range s.released {
		batch = append(batch, sm)
	}
	s.released = s.released[:0]
	pids := make([]int, 0, len(looks))
	for pid := range looks {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		for _, sm := range looks[pid] {
			batch = append(batch, sm)
		}
	}
	return batch, true
}

// markPath charges the tick's wall time to one thread: the target's main
// thread, or, while it waits for a child, that child's main thread, and so
// on down; while it waits on a futex, the thread of its process doing the
// most (worker). /proc tells a parent's children; it does not tell which
// thread or process ended any other wait, so the path stops there.
func (s *Sampler) markPath(looks map[int][]*event.ProcSample) {
	pid := s.o.PID
	for depth := 0; depth < 64; depth++ {
		var at *event.ProcSample
		for _, sm := range looks[pid] {
			if int(sm.TID) == pid {
				at = sm
			}
		}
		if at == nil {
			return
		}
		if isFutexWait(at) {
			// The thread it waits for, and what that one waits for.
			if w := s.worker(pid, looks); w != nil {
				at = w
			}
		}
		if at.State == 'S' && at.FileKind == event.KindPipe && strings.HasPrefix(at.Object, "pipe:[") {
			if other := s.pipeWriter(pid, at.Object, looks); other != 0 {
				pid = other // what it reads, another process of the target writes
				continue
			}
			// Its writer may be a child not yet found: the tree is read
			// again at the next tick.
			s.rediscover = true
		}
		if at.State == 'R' || !isChildWait(at.Syscall) {
			at.OnPath = true
			return
		}
		child := s.childOf(pid, looks)
		if child == 0 {
			at.OnPath = true
			return
		}
		pid = child
	}
}

// pipeWriter is another process of the target holding pipe (its fd
// link, "pipe:[INO]"): the one a read of it waits for, as a pipeline's last
// command waits for the one before it; the lowest pid of those, 0 none.
// Read only while the path waits on a pipe: a walk of each process's fd
// table.
func (s *Sampler) pipeWriter(reader int, pipe string, looks map[int][]*event.ProcSample) int {
	var pids []int
	for pid := range s.procs {
		if pid != reader && len(looks[pid]) > 0 {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	for _, pid := range pids {
		dir := filepath.Join(s.o.Root, "proc", strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && link == pipe {
				return pid
			}
		}
	}
	return 0
}

// isFutexWait: a thread asleep on a futex, as a join, a lock or a
// condition waits.
func isFutexWait(sm *event.ProcSample) bool { return sm.State == 'S' && sm.Syscall == unix.SYS_FUTEX }

// worker is the thread of process pid that a main thread asleep on a
// futex (a join, a lock) waits for, as near as /proc tells: /proc does not
// say which thread will end the wait, so the path goes to the one doing
// the most: on a CPU or runnable first, then in an uninterruptible wait,
// then in any other wait but a futex's, the lowest thread id of the best.
// A thread looked at less often (asleep half a second) has its last look
// stand for this tick. A futex wait with a timeout ranks below any other
// wait: it may be a wait on time (Event.wait(5)), not on another thread.
// None: the main thread's own wait (a lock no thread of its process works
// towards). Without it, a program whose work was in a
// thread read as waiting on a lock (ACCURACY.md: 0 of 93).
func (s *Sampler) worker(pid int, looks map[int][]*event.ProcSample) *event.ProcSample {
	rank := func(sm *event.ProcSample) int {
		switch {
		case sm.State == 'R':
			return 4
		case sm.State == 'D':
			return 3
		case !isFutexWait(sm) && sm.State == 'S':
			return 2
		case isFutexWait(sm) && sm.TimeoutAt != 0:
			return 1
		}
		return 0
	}
	better := func(a, b *event.ProcSample) bool {
		return b == nil || rank(a) > rank(b) || rank(a) == rank(b) && a.TID < b.TID
	}
	var best *event.ProcSample
	looked := map[uint32]bool{}
	for _, sm := range looks[pid] {
		looked[sm.TID] = true
		if int(sm.TID) != pid && rank(sm) > 0 && better(sm, best) {
			best = sm
		}
	}
	if best != nil {
		return best
	}
	p := s.procs[pid]
	if p == nil {
		return nil
	}
	var last *task
	for tid, t := range p.tasks {
		if tid == pid || looked[uint32(tid)] || t.look == nil || rank(t.look) == 0 {
			continue
		}
		if last == nil || better(t.look, last.look) {
			last = t
		}
	}
	if last == nil {
		return nil
	}
	if h := last.held; h != nil {
		last.held = nil
		if h.Time == s.now {
			// Looked at this tick, held: that look is this tick's.
			looks[pid] = append(looks[pid], h)
			return h
		}
		s.released = append(s.released, h)
	}
	sm := s.again(p, last)
	looks[pid] = append(looks[pid], sm)
	return sm
}

// childOf is the child process of pid a wait for a child waits on: the
// youngest one still looked at (a shell runs its commands one by one).
func (s *Sampler) childOf(pid int, looks map[int][]*event.ProcSample) int {
	best := 0
	for cpid, p := range s.procs {
		if p.ppid == pid && len(looks[cpid]) > 0 && cpid > best {
			best = cpid
		}
	}
	return best
}

// isChildWait: wait4, waitid, vfork.
func isChildWait(nr int32) bool {
	r, _ := classify.SampleReason(classify.Sample{State: 'S', Syscall: nr})
	return r == event.ReasonChild
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// noStack is said once when a stack cannot be read.
func (s *Sampler) noStack(path string, err error) {
	if s.stats.NoStack {
		return
	}
	s.stats.NoStack = true
	if s.o.Notify != nil {
		s.o.Notify(fmt.Sprintf("%s: %v: waits are told by their syscall, file and wait channel (the stack needs root)",
			path, unwrapErrno(err)))
	}
}

func unwrapErrno(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
