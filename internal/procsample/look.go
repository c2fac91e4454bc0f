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

// lookAt looks at every thread of a process once: its state and run delay
// always; its syscall, file, wait channel and stack when it waits in a new
// wait (a thread that has not run since the last look is in the same one).
func (s *Sampler) lookAt(p *proc) []*event.ProcSample {
	s.listTasks(p)
	var out []*event.ProcSample
	for tid, t := range p.tasks {
		sm, err := s.lookAtTask(p, t)
		if err == errExited {
			continue // a zombie: its time is over, its parent's to reap
		}
		if err != nil {
			// Exited between the listing and the read: its look is dropped.
			s.stats.Vanished++
			t.close()
			delete(p.tasks, tid)
			continue
		}
		out = append(out, sm)
	}
	return out
}

// listTasks opens the threads that appeared and closes those that left.
func (s *Sampler) listTasks(p *proc) {
	dir, err := os.Open(filepath.Join(s.o.Root, "proc", strconv.Itoa(p.pid), "task"))
	if err != nil {
		for tid, t := range p.tasks {
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
			t.close()
			delete(p.tasks, tid)
		}
	}
}

func (s *Sampler) lookAtTask(p *proc, t *task) (*event.ProcSample, error) {
	b, err := reread(t.schedstat, s.buf)
	if err != nil {
		return nil, err
	}
	now, ok := parseSchedstat(b)
	if !ok {
		return nil, errGone
	}
	b, err = reread(t.stat, s.buf)
	if err != nil {
		return nil, err
	}
	st, ok := parseStat(b)
	if !ok {
		return nil, errGone
	}
	if st.State == 'Z' || st.State == 'X' {
		return nil, errExited
	}
	sm := &event.ProcSample{Header: event.Header{Time: s.now, PID: uint32(p.pid), TID: uint32(t.tid), Comm: event.EncodeText(st.Comm)},
		State: st.State, Syscall: -1, FD: -1, StackID: -1}
	if t.looked {
		sm.RanNS = now.Ran - min(now.Ran, t.last.Ran)
		sm.RunDelayNS = now.Delay - min(now.Delay, t.last.Delay)
		sm.IntervalNS = s.now - min(s.now, t.lastLook)
		sm.WasRunnable = t.prev.state == 'R'
	}
	sameWait := t.looked && now.Runs == t.last.Runs && st.State == t.prev.state
	t.last, t.looked, t.lastLook = now, true, s.now
	if st.State == 'R' {
		sm.Throttled = p.quota != nil && p.quota.grew
		t.prev = facts{state: 'R'}
		return sm, nil
	}
	if !sameWait {
		t.prev = s.readWait(t, st.State)
	}
	f := t.prev
	sm.Syscall, sm.Wchan = f.syscall, event.EncodeText(f.wchan)
	if len(f.stack) > 0 {
		sm.Stack = f.stack
		sm.StackID = s.stackID(f.stack)
	}
	if f.fd >= 0 {
		sm.FD = f.fd
		file := s.fileOf(p, f.fd)
		sm.FileKind, sm.Object = file.kind, event.EncodeText(file.object)
	} else if f.syscall >= 0 && st.State == 'S' {
		sm.PollOnSockets = s.inetSockets(p)
	}
	return sm, nil
}

// readWait reads what a waiting thread waits in: its syscall (with its
// file's fd), wait channel, and stack where readable.
func (s *Sampler) readWait(t *task, state byte) facts {
	f := facts{state: state, syscall: -1, fd: -1}
	if b, err := t.readFile("syscall", s.buf); err == nil {
		var args []uint64
		f.syscall, args = sysinfo.ParseSyscall(b)
		if f.syscall >= 0 && len(args) > 0 && sysinfo.FDArg(f.syscall) && args[0] < 1<<31 {
			f.fd = int32(args[0])
		}
	}
	if b, err := t.readFile("wchan", s.buf); err == nil {
		f.wchan = parseWchan(b)
	}
	if !s.stats.NoStack {
		b, err := t.readFile("stack", s.buf)
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
