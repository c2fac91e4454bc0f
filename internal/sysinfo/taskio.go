package sysinfo

import (
	"github.com/prometheus/procfs"
)

// ThreadIO is one thread's own I/O accounting, /proc/PID/task/TID/io.
type ThreadIO struct {
	PID, TID                   int
	Comm                       string
	RChar, WChar, SyscR, SyscW uint64
	ReadBytes, WriteBytes      uint64
	CancelledWriteBytes        uint64
}

// ThreadsIO reads the I/O accounting of every thread of pids (every
// process when pids is nil). A process or thread gone meanwhile, or one
// whose io file is not readable, is left out.
func (fs FS) ThreadsIO(pids []int) []ThreadIO {
	pfs, err := procfs.NewFS(fs.path("/proc"))
	if err != nil {
		return nil
	}
	if pids == nil {
		procs, err := pfs.AllProcs()
		if err != nil {
			return nil
		}
		for _, p := range procs {
			pids = append(pids, p.PID)
		}
	}
	var out []ThreadIO
	for _, pid := range pids {
		threads, err := pfs.AllThreads(pid)
		if err != nil {
			continue
		}
		for _, t := range threads {
			io, err := t.IO()
			if err != nil {
				continue
			}
			comm, _ := t.Comm()
			out = append(out, ThreadIO{PID: pid, TID: t.PID, Comm: comm, RChar: io.RChar, WChar: io.WChar,
				SyscR: io.SyscR, SyscW: io.SyscW, ReadBytes: io.ReadBytes, WriteBytes: io.WriteBytes,
				CancelledWriteBytes: uint64(max(io.CancelledWriteBytes, 0))})
		}
	}
	return out
}
