package critpath

import (
	"slices"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
)

// edge is what ended an off-CPU interval: the graph's edge from the waker's
// work into the waiter. It is typed once, when the graph is built, from the
// wait's reason (classify's) and the wakeup's facts, and the policy
// (policy.go) is written in edges: which the walk follows, and which name a
// process outside as holding the wait up.
type edge uint8

const (
	// edgeNone: no task's work ended it: it was preempted or never woken
	// in the window.
	edgeNone edge = iota
	// edgeCompletion: an I/O completion (a disk read or write, a sync,
	// reclaim): the interrupt ran on whatever task it interrupted.
	edgeCompletion
	// edgeDevice: a network card's receive path, or a retransmission's
	// timer, in a softirq on whatever task it interrupted: a network wait
	// whose waker was not sending on a socket.
	edgeDevice
	// edgeTimer: its own timeout (sleep).
	edgeTimer
	// edgeQuota: its cgroup's CPU quota was refilled.
	edgeQuota
	// edgeSocket: a hop over a socket: the waker sent on one as it woke it.
	edgeSocket
	// edgePipe: a pipe or a Unix socket fed by the waker (ipc).
	edgePipe
	// edgeLock: a lock its holder let go.
	edgeLock
	// edgeChild: a child that exited.
	edgeChild
	// edgeWakeup: another task woke it, for another reason (other).
	edgeWakeup
)

var edgeNames = [...]string{"none", "completion", "device", "timer", "quota", "socket", "pipe", "lock", "child", "wakeup"}

func (e edge) String() string { return edgeNames[e] }

// edgeOf types the edge that ended iv.
func edgeOf(iv *pathInterval) edge {
	switch r := event.Reason(iv.reason); {
	case r == event.ReasonNetwork && iv.wakerOnSocket:
		return edgeSocket
	case r == event.ReasonNetwork:
		return edgeDevice
	case r == event.ReasonIPC:
		return edgePipe
	case r == event.ReasonLock:
		return edgeLock
	case r == event.ReasonChild:
		return edgeChild
	case r == event.ReasonOther:
		return edgeWakeup
	case r.Disk() || r == event.ReasonMemory:
		return edgeCompletion
	case r == event.ReasonSleep:
		return edgeTimer
	case r == event.ReasonCPUQuota:
		return edgeQuota
	}
	return edgeNone
}

// timedOutUnseen says whether a poll of a process outside the target was
// ended by its own timeout though no timer was recorded: no task was seen
// ending it (waker pid 0). The kernel notes the waker of a peer's wait only
// when it lasted over a millisecond (peers.bpf.h), and recordings made
// before event.WakerTimer noted no timer at all. Such a poll is taken as the
// timer's, and classify.TimedOut says whether a wait the timer ended slept.
// A target's wait always has its waker: one no task ended was the timer's
// (classify knows it) or an interrupt's, a network card's.
func timedOutUnseen(iv *pathInterval, state, syscall string) bool {
	if iv.wakerPID != 0 || len(state) != 1 || !slices.Contains(event.PollSyscalls, syscall) {
		return false
	}
	nr, _ := event.SyscallNr(syscall)
	return classify.TimedOut(classify.Input{State: state[0], Syscall: nr, WakerSyscall: event.WakerTimer})
}
