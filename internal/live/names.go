package live

import (
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/sysinfo"
)

// names remembers, across frames, what processes, threads, files and
// devices are called, and who dirtied each file. Every table is bounded (a
// system-wide view runs for days); what falls out is named by its number.
type names struct {
	procs    *lru.Cache[uint32, *procName]
	threads  *lru.Cache[uint32, string]
	files    *lru.Cache[fileKey, fileName]
	dirtiers *lru.Cache[fileKey, uint32]
	devices  map[uint32]string
	// devicesRead: when /sys was last listed, so an unknown device number
	// does not make every frame list it again.
	devicesRead time.Time
	sys         sysinfo.FS
	// cgroupOf reads a process's cgroup path (sysinfo.FS.Cgroup; tests replace it).
	cgroupOf func(pid uint32) string
	commOf   func(pid uint32) string
	// undescribe takes a forgotten file out of the kernel's table of files
	// described (capture.Engine.Undescribe); nil in tests.
	undescribe func(event.FileRef)
	// gone: processes and threads that exited, by the number of frames still
	// to label before they are forgotten. Not at once: the frame their exit
	// falls in must still name them (/proc no longer can), and their last
	// on-CPU time is drained up to a second later, into the next frame.
	goneProcs, goneThreads map[uint32]int
}

// keepGone is how many frames an exited process or thread keeps its name.
const keepGone = 2

type procName struct {
	comm     string
	mainComm bool // comm is the main thread's
	cgroup   string
}

type fileName struct {
	path string
	peer string
}

// fileKey is a file without its kind: the kernel reports the same inode as
// a regular file in a syscall and as page cache in writeback.
type fileKey struct {
	dev uint32
	ino uint64
	gen uint32
}

func keyOf(r event.FileRef) fileKey { return fileKey{r.Dev, r.Ino, r.Gen} }

const (
	maxProcs   = 1 << 16
	maxThreads = 1 << 16
	// maxFiles: a file is described once while it is in the kernel's table
	// (capture.LiveDescribedFiles, the same size); a name forgotten here is
	// taken out of that table too (undescribe), so the file is described
	// again when next met. The kernel's table refreshes a file at each use,
	// this one only when a frame names it: without that, a file every new
	// process opens (ld.so.cache) lost its name after a few minutes.
	maxFiles = capture.LiveDescribedFiles
)

func newNames() *names {
	procs, _ := lru.New[uint32, *procName](maxProcs)
	threads, _ := lru.New[uint32, string](maxThreads)
	n := &names{}
	files, _ := lru.NewWithEvict[fileKey, fileName](maxFiles, func(k fileKey, _ fileName) {
		if n.undescribe != nil {
			n.undescribe(event.FileRef{Dev: k.dev, Ino: k.ino, Gen: k.gen})
		}
	})
	dirtiers, _ := lru.New[fileKey, uint32](maxFiles)
	// Names read from /proc become text as the kernel's records do
	// (event.EncodeText), so a process is named alike either way.
	*n = names{procs: procs, threads: threads, files: files, dirtiers: dirtiers, devices: map[uint32]string{}, sys: sysinfo.Host,
		goneProcs: map[uint32]int{}, goneThreads: map[uint32]int{},
		cgroupOf: func(pid uint32) string { return event.EncodeText(sysinfo.Host.Cgroup(pid)) },
		commOf:   func(pid uint32) string { return event.EncodeText(sysinfo.Host.Comm(pid)) }}
	return n
}

func (n *names) noteThread(pid, tid uint32, comm string) {
	if comm == "" {
		return
	}
	if old, ok := n.threads.Peek(tid); !ok || old != comm {
		n.threads.Add(tid, comm)
	}
	p, ok := n.procs.Get(pid)
	if !ok {
		pn := &procName{comm: comm, mainComm: tid == pid}
		if tid != pid {
			// Met first through another thread (pid 1's tokio-rt-worker
			// while its main thread, process_api, sleeps): a process is
			// named after its main thread, which /proc has.
			if main := n.commOf(pid); main != "" {
				pn.comm, pn.mainComm = main, true
			}
		}
		n.procs.Add(pid, pn)
		return
	}
	if tid == pid || !p.mainComm {
		p.comm, p.mainComm = comm, tid == pid
	}
}

func (n *names) noteExec(e *event.Exec) {
	p := &procName{comm: e.Comm, mainComm: true, cgroup: e.Cgroup}
	n.procs.Add(e.PID, p)
	n.threads.Add(e.TID, e.Comm)
	delete(n.goneProcs, e.PID) // a reused pid: the new process keeps its name
	delete(n.goneThreads, e.TID)
}

// noteFork names a new thread or process after its parent, whose name it
// has until it execs or renames itself: one that exits first is named so.
func (n *names) noteFork(f *event.Fork) {
	if f.Comm == "" {
		return
	}
	delete(n.goneThreads, f.ChildTID)
	if f.ChildPID != f.PID {
		delete(n.goneProcs, f.ChildPID)
		n.procs.Remove(f.ChildPID) // a reused pid's old name
	}
	n.noteThread(f.ChildPID, f.ChildTID, f.Comm)
}

// noteExit takes the name the exit carries (the kernel's, read as the task
// died: the short-lived are gone from /proc before any frame is labelled)
// and forgets the thread, and the process with its last thread, once
// keepGone frames have been labelled.
func (n *names) noteExit(e *event.Exit) {
	n.noteThread(e.PID, e.TID, e.Comm)
	n.goneThreads[e.TID] = keepGone
	if e.GroupDead {
		n.goneProcs[e.PID] = keepGone
	}
}

// forgetGone counts one labelled frame against the exited and forgets
// those whose time is up.
func (n *names) forgetGone() {
	for tid, left := range n.goneThreads {
		if left <= 1 {
			n.threads.Remove(tid)
			delete(n.goneThreads, tid)
		} else {
			n.goneThreads[tid] = left - 1
		}
	}
	for pid, left := range n.goneProcs {
		if left <= 1 {
			n.procs.Remove(pid)
			delete(n.goneProcs, pid)
		} else {
			n.goneProcs[pid] = left - 1
		}
	}
}

func (n *names) noteFile(f *event.File) {
	name := fileName{path: f.Path}
	if f.Peer.IsValid() {
		name.peer = f.Peer.String()
	}
	n.files.Add(keyOf(f.Ref), name)
}

func (n *names) noteDirtier(f event.FileRef, pid uint32) { n.dirtiers.Add(keyOf(f), pid) }

func (n *names) dirtierOf(f event.FileRef) (uint32, bool) { return n.dirtiers.Get(keyOf(f)) }

// label names a finished frame's processes, threads and objects.
func (n *names) label(f *Frame) {
	for pid, p := range f.Procs {
		if pn, ok := n.procs.Get(pid); ok {
			p.Comm = pn.comm
			if pn.cgroup == "" {
				pn.cgroup = n.cgroupOf(pid)
			}
			p.Cgroup = format.Safe(pn.cgroup)
		} else if comm := n.commOf(pid); comm != "" {
			// seen only waiting since capture began: no event named it yet
			pn := &procName{comm: comm, mainComm: true, cgroup: n.cgroupOf(pid)}
			n.procs.Add(pid, pn)
			p.Comm, p.Cgroup = comm, format.Safe(pn.cgroup)
		}
		if p.Comm == "" {
			p.Comm = fmt.Sprintf("[pid %d]", pid)
		}
		p.Comm = format.Safe(p.Comm)
		for tid, t := range p.Threads {
			t.Comm, _ = n.threads.Get(tid)
			if t.Comm == "" {
				t.Comm = p.Comm
			}
			t.Comm = format.Safe(t.Comm)
			for o := range t.On {
				n.name(f, o)
			}
		}
		for o := range p.On {
			n.name(f, o)
		}
	}
	for ref := range f.Files {
		n.name(f, Object{File: ref})
	}
	for dev, d := range f.Devices {
		d.Name = n.device(dev)
	}
	n.forgetGone()
}

func (n *names) name(f *Frame, o Object) {
	if _, ok := f.Names[o]; ok {
		return
	}
	if !o.File.Known() {
		f.Names[o] = n.device(o.Dev)
		return
	}
	fn, ok := n.files.Get(keyOf(o.File))
	switch {
	case !ok:
		maj, min := event.Dev(o.File.Dev)
		f.Names[o] = fmt.Sprintf("inode %d on %d:%d", o.File.Ino, maj, min)
		// Its description was lost (a full meta ring under load) or never
		// made, yet the kernel's table says it was sent: take it out, so the
		// file is described when next met instead of shown by inode until
		// the table evicts it (top showed 105 such rows beside a make test).
		if n.undescribe != nil {
			n.undescribe(o.File)
		}
	case fn.peer != "":
		f.Names[o] = "peer " + format.Safe(fn.peer)
	default:
		f.Names[o] = format.Safe(fn.path)
	}
}

// device names a block device as /sys does (vda, loop3).
func (n *names) device(dev uint32) string {
	if name, ok := n.devices[dev]; ok {
		return name
	}
	if time.Since(n.devicesRead) > 5*time.Second {
		n.devicesRead = time.Now()
		for _, d := range n.sys.BlockDevices() {
			n.devices[d.Dev] = format.Safe(d.Name)
		}
		if name, ok := n.devices[dev]; ok {
			return name
		}
	}
	maj, min := event.Dev(dev)
	return fmt.Sprintf("%d:%d", maj, min)
}
