package watch

import (
	"bytes"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// ownLinger is how long a child's pid stays watch's own after it ended:
// its last events reach the watch after it, through the rings and the
// reordering.
const ownLinger = time.Minute

// ownChildren are the processes watch starts for its incidents: the
// recording's writer, the explanations, the OTLP export. The kernel leaves
// out only watch's own pid; these the capture sees as it sees everyone, and
// their work (DuckDB writing, an analysis's CPU) follows an incident. A
// stall of theirs is no trigger, and no incident is named after them. Their
// events stay in the recordings: what they cost other processes is
// whyslow's own doing, and shown as such.
type ownChildren struct {
	mu      sync.Mutex
	endedAt map[uint32]time.Time // pid -> when it ended (zero: running)
	// pids is a copy of endedAt's keys, read at every event without a lock.
	pids atomic.Pointer[map[uint32]bool]
}

// has says whether pid is a child of watch's, running or ended a moment ago.
func (o *ownChildren) has(pid uint32) bool {
	m := o.pids.Load()
	return m != nil && len(*m) > 0 && (*m)[pid]
}

// output runs cmd as cmd.Output does (cmd.CombinedOutput with combined),
// its pid watch's own while it runs and for ownLinger after.
func (o *ownChildren) output(cmd *exec.Cmd, combined bool) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout = &out
	if combined {
		cmd.Stderr = &out
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	o.started(cmd)
	err := cmd.Wait()
	o.ended(cmd)
	return out.Bytes(), err
}

// started notes cmd's process, just started, as watch's own.
func (o *ownChildren) started(cmd *exec.Cmd) { o.note(uint32(cmd.Process.Pid), time.Time{}) }

// ended notes that cmd's process ended.
func (o *ownChildren) ended(cmd *exec.Cmd) { o.note(uint32(cmd.Process.Pid), time.Now()) }

// note records pid as running (at zero) or ended at, and forgets those
// ended longer than ownLinger ago.
func (o *ownChildren) note(pid uint32, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.endedAt == nil {
		o.endedAt = map[uint32]time.Time{}
	}
	o.endedAt[pid] = at
	m := make(map[uint32]bool, len(o.endedAt))
	for p, end := range o.endedAt {
		if !end.IsZero() && time.Since(end) > ownLinger {
			delete(o.endedAt, p)
			continue
		}
		m[p] = true
	}
	o.pids.Store(&m)
}
