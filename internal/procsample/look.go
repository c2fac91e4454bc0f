package procsample

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// lookAt looks at the threads of a process due a look: its state and run
// delay always; its syscall, file, wait channel and stack when it waits in
// a new wait (a thread that has not run since the last look is in the same
// one). A look at a thread other than the main thread that finds it has
// not run since the last is not handed on but held (task.hold): a run of
// them is one look, handed on when the thread is next seen to have run or
// is gone. looked counts the threads looked at.
func (s *Sampler) lookAt(p *proc) (out []*event.ProcSample, looked int) {
	s.listTasks(p)
	for tid, t := range p.tasks {
		if s.tick < t.due && tid != p.pid {
			continue
		}
		sm, same, err := s.lookAtTask(p, t)
		if err == errExited {
			s.release(t)
			continue // a zombie: its time is over, its parent's to reap
		}
		if err != nil {
			// Exited between the listing and the read: its look is dropped.
			s.stats.Vanished++
			s.release(t)
			t.close()
			delete(p.tasks, tid)
			p.relist = true
			continue
		}
		looked++
		if same && tid != p.pid {
			t.hold(sm)
			continue
		}
		if t.held != nil {
			out = append(out, t.held)
			t.held = nil
		}
		out = append(out, sm)
	}
	return out, looked
}

// hold keeps a look that found the thread had not run since the last: the
// same wait, one look for the run of them (its interval theirs summed, its
// time the last's). One row per wait, not per look, for a thread asleep:
// at 1,000 threads each row was most of the sampler's cost after its read
// (BENCHMARKS.md section 10).
func (t *task) hold(sm *event.ProcSample) {
	if t.held == nil {
		t.held = sm
		return
	}
	t.held.Time = sm.Time
	t.held.IntervalNS += sm.IntervalNS
	t.held.Throttled, t.held.PollOnSockets = sm.Throttled, sm.PollOnSockets
}

// release hands on thread t's held look, if any, with the next batch.
func (s *Sampler) release(t *task) {
	if t.held != nil {
		s.released = append(s.released, t.held)
		t.held = nil
	}
}

// listTasks opens the threads that appeared and closes those that left.
// The task directory is listed again only when the process's count of
// threads changed or a thread's read failed since the last listing: a
// listing of 1,000 threads costs more than all of a tick's looks at them
// (BENCHMARKS.md section 10). A thread that started as another exited is
// found by the failed read, one tick later.
func (s *Sampler) listTasks(p *proc) {
	n := p.threads(s.o.Root)
	if n > 0 && n == p.listed && !p.relist {
		return
	}
	p.listed, p.relist = n, false
	dir, err := os.Open(filepath.Join(s.o.Root, "proc", strconv.Itoa(p.pid), "task"))
	if err != nil {
		for tid, t := range p.tasks {
			s.release(t)
			t.close()
			delete(p.tasks, tid)
		}
		return
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	present := make(map[int]bool, len(names))
	for _, n := range names {
		tid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		present[tid] = true
		if p.tasks[tid] == nil {
			if t, err := openTask(s.o.Root, p.pid, tid); err == nil {
				p.tasks[tid] = t
			}
		}
	}
	for tid, t := range p.tasks {
		if !present[tid] {
			s.release(t)
			t.close()
			delete(p.tasks, tid)
		}
	}
}

// same says the thread had not run since its last look (Sampler.again).
func (s *Sampler) lookAtTask(p *proc, t *task) (sm *event.ProcSample, same bool, err error) {
	b, err := reread(t.schedstat, s.buf)
	if err != nil {
		return nil, false, err
	}
	now, ok := parseSchedstat(b)
	if !ok {
		return nil, false, errGone
	}
	if t.looked && now == t.last {
		s.backOff(t)
		return s.again(p, t), true, nil
	}
	t.idle, t.gap, t.due = 0, 0, 0
	b, err = reread(t.stat, s.buf)
	if err != nil {
		return nil, false, err
	}
	st, ok := parseStat(b, t.comm)
	if !ok {
		return nil, false, errGone
	}
	if st.State == 'Z' || st.State == 'X' {
		return nil, false, errExited
	}
	t.comm = st.Comm
	sm = &event.ProcSample{Header: event.Header{Time: s.now, PID: uint32(p.pid), TID: uint32(t.tid), Comm: event.EncodeText(st.Comm)},
		State: st.State, Syscall: -1, FD: -1, StackID: -1}
	if t.looked {
		sm.RanNS = now.Ran - min(now.Ran, t.last.Ran)
		sm.RunDelayNS = now.Delay - min(now.Delay, t.last.Delay)
		sm.IntervalNS = s.now - min(s.now, t.lastLook)
		sm.WasRunnable = t.prev.state == 'R'
	}
	prevLook := t.lastLook
	if !t.looked {
		// Its first look: its wait began after the thread did.
		prevLook = startedAt(b)
	}
	t.last, t.looked, t.lastLook = now, true, s.now
	t.look = sm
	if st.State == 'R' {
		if sm.RunDelayNS > 0 || sm.WasRunnable {
			sm.Throttled = s.throttled(t)
		}
		t.prev = facts{state: 'R'}
		return sm, false, nil
	}
	t.prev = s.readWait(t, st.State, prevLook)
	f := t.prev
	sm.Syscall, sm.Wchan, sm.TimeoutAt = f.syscall, event.EncodeText(f.wchan), f.timeoutAt
	if st.State == 'D' {
		sm.Reclaim = s.reclaiming(t)
	}
	if len(f.stack) > 0 {
		sm.Stack = f.stack
		sm.StackID = s.stackID(f.stack)
	}
	if f.fd >= 0 {
		sm.FD = f.fd
		file := s.fileOf(p, f.fd)
		sm.FileKind, sm.Object = file.kind, event.EncodeText(file.object)
		if pollArrays[f.syscall] || fdSets[f.syscall] {
			// A poll of one file: on the network when it is a TCP or
			// UDP socket.
			sm.PollOnSockets = file.kind == event.KindSocketInet
		}
	} else if f.syscall >= 0 && st.State == 'S' {
		sm.PollOnSockets = s.inetSockets(p)
	}
	return sm, false, nil
}

// again is the look at a thread that has not run since its last look
// (schedstat's time on a CPU, run delay and count of runs all unchanged):
// it is in the same state and the same wait, so stat, syscall, wchan,
// stack and its file are not read again. It cannot have left a wait
// without running, but it can have been woken and be queued for a CPU
// still: that delay is booked when it runs, and told by its next look.
// This is most of the sampler's saving: an idle thread costs one pread.
func (s *Sampler) again(p *proc, t *task) *event.ProcSample {
	sm := *t.look
	sm.Time = s.now
	sm.RanNS, sm.RunDelayNS = 0, 0
	sm.IntervalNS = s.now - min(s.now, t.lastLook)
	sm.WasRunnable = sm.State == 'R'
	sm.OnPath = false
	if sm.State == 'R' {
		sm.Throttled = s.throttled(t)
	} else if sm.FD < 0 && sm.Syscall >= 0 && sm.State == 'S' {
		sm.PollOnSockets = s.inetSockets(p)
	}
	t.lastLook = s.now
	return &sm
}

// backOff spaces the looks at a thread that has not run for half a second,
// doubling the time between them up to a second. A process's main thread
// is looked at every tick all the same: the wall time is charged to it
// (markPath). At 1,000 threads asleep, a look at each at every tick was
// most of the sampler's cost (BENCHMARKS.md section 10); a look that finds
// the thread has not run since the last one knows it was in the same wait
// all along, so it stands for its whole interval (IntervalNS), as many
// looks would have. A thread woken in the gap is seen up to a second late.
func (s *Sampler) backOff(t *task) {
	t.idle++
	if t.idle < s.o.Hz/2 {
		return
	}
	t.gap = min(max(2*t.gap, 2), uint64(s.o.Hz))
	t.due = s.tick + t.gap
}

// readWait reads what a waiting thread waits in: its syscall (with its
// file's fd), wait channel, and stack where readable.
// prevLook is when it was looked at before (its wait began after): a
// relative timeout ends it no earlier than that and the timeout.
func (s *Sampler) readWait(t *task, state byte, prevLook uint64) facts {
	f := facts{state: state, syscall: -1, fd: -1}
	if b, err := t.readFile(&t.syscall, "syscall", s.buf); err == nil {
		var args []uint64
		f.syscall, args = sysinfo.ParseSyscall(b)
		if f.syscall >= 0 && len(args) > 0 && sysinfo.FDArg(f.syscall) && args[0] < 1<<31 {
			f.fd = int32(args[0])
		}
		if state == 'S' {
			f.timeoutAt = s.timeoutOf(t.tid, f.syscall, args, prevLook)
			if f.fd < 0 {
				f.fd = s.polledFD(t.tid, f.syscall, args)
			}
		}
	}
	if b, err := t.readFile(&t.wchan, "wchan", s.buf); err == nil {
		f.wchan = parseWchan(b)
	}
	if !s.stats.NoStack {
		b, err := t.readFile(&t.stack, "stack", s.buf)
		switch {
		case err == nil:
			f.stack = sysinfo.ParseStack(b)
		case errors.Is(err, os.ErrPermission) || isPermission(err):
			s.noStack(filepath.Join(t.dir, "stack"), err)
		}
	}
	return f
}

func isPermission(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), "operation not permitted"))
}

// stackID numbers each distinct stack once, for the recording's stacks table.
func (s *Sampler) stackID(frames []string) int32 {
	key := strings.Join(frames, "\x00")
	id, ok := s.stacks[key]
	if !ok {
		id = int32(len(s.stacks))
		s.stacks[key] = id
	}
	return id
}

// fileOf is what the process's fd is now: read again by its link, which
// changes when the fd is closed and reused.
func (s *Sampler) fileOf(p *proc, fd int32) fileOf {
	path := filepath.Join(s.o.Root, "proc", strconv.Itoa(p.pid), "fd", strconv.Itoa(int(fd)))
	link, err := os.Readlink(path)
	if err != nil {
		return fileOf{}
	}
	if l, ok := p.files[fd]; ok && l.link == link && l.file.kind != event.KindSocketOther {
		return l.file
	}
	f := describeLink(link, path, func(ino uint64) (fileOf, bool) { return s.socket(p, ino) })
	p.files[fd] = linked{link: link, file: f}
	return f
}

// socket finds a socket by inode in the process's namespace's tables, read
// again at most once a tick when it is not there yet.
func (s *Sampler) socket(p *proc, ino uint64) (fileOf, bool) {
	if f, ok := p.sockets.byInode[ino]; ok {
		return f, true
	}
	if p.sockets.read == s.tick {
		return fileOf{}, false
	}
	p.sockets.byInode, p.sockets.read = readSockets(s.o.Root, p.pid), s.tick
	f, ok := p.sockets.byInode[ino]
	return f, ok
}

// inetSockets says, at most once a second, whether the process holds a
// TCP or UDP socket.
func (s *Sampler) inetSockets(p *proc) bool {
	if p.inet.tick == 0 || s.tick-p.inet.tick >= uint64(s.o.Hz) {
		p.inet.has = hasInetSockets(s.o.Root, p.pid, func(ino uint64) (fileOf, bool) { return s.socket(p, ino) })
		p.inet.tick = s.tick
	}
	return p.inet.has
}
