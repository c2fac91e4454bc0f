package explain

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// A wait is given another's waker only when it is the same wait: a client's
// polls on its server, a moment apart, in the same call and a tick long
// (critpath's poll_runs); a poll a pipe's writer ended is ipc whatever
// sockets the process has (classify). The accuracy generator's misses
// (ACCURACY.md, seeds 267 and 122), on hand-built recordings.

// clientFor is a recording of the client (pid 100) over ms milliseconds,
// with the server's end of a connection (serverSock, outside_path_test.go).
func clientFor(t *testing.T, name string, ms float64, evs ...event.Event) *Explanation {
	t.Helper()
	r := storetest.New(t, name, map[string]string{"level": "waits", "scope": "command", "command": "client",
		"target_pid": "100", "target_start_mono": strconv.FormatUint(storetest.At(0), 10),
		"target_end_mono": strconv.FormatUint(storetest.At(ms), 10), "duration_ns": strconv.FormatUint(storetest.MS(ms), 10),
		"exit_code": "0"})
	r.Add(&event.File{Header: server.At(0), Ref: serverSock, Path: "socket:[500]",
		Local: netip.MustParseAddrPort("127.0.0.1:8080"), Peer: netip.MustParseAddrPort("127.0.0.1:45000")})
	r.Add(evs...)
	return explainRecorded(t, r.Close(), 100)
}

// timedOut is the client's poll in syscall from fromMS to toMS, ended by its
// own timeout (the timer: classify.TimedOut, sleep).
func timedOut(r *storetest.Recording, syscall string, fromMS, toMS float64) *event.OffCPU {
	o := r.Off(client, fromMS, toMS, event.ReasonSleep, syscall, storetest.Thread{}, 0)
	o.WakerSyscall = event.WakerTimer
	return o
}

// answeredIn is the client's poll in syscall from fromMS to toMS, ended by
// the server's answer.
func answeredIn(r *storetest.Recording, syscall string, fromMS, toMS float64) *event.OffCPU {
	o := r.Off(client, fromMS, toMS, event.ReasonNetwork, syscall, server, 0.01)
	o.WakerSide, o.WakerFile, o.WakerSyscall = event.SideServer, serverSock, 44
	return o
}

// Seed 267: a select that ran out its 1.3 s timeout on a socket nobody
// sends to, then, a moment later, a select on a new connection that a
// server answers after 100 ms. The first is the program's own sleep, not a
// tick of a wait on that server: the path never goes into the server for it.
func TestLongTimedOutPollBeforeARequestSlept(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	x := clientFor(t, "timed-out-then-request", 1400,
		timedOut(r, "pselect6", 0, 1300),
		answeredIn(r, "pselect6", 1300.2, 1400),
	)
	if x.Verdict.Reason != "sleep" || x.Path.ByReason["sleep"] < 1.29 {
		t.Fatalf("verdict %q (%v), want sleep: the timed-out select is a wait of its own", x.Verdict.Reason, x.Path.ByReason)
	}
	if net := x.Path.ByReason["network"]; net > 0.101 {
		t.Errorf("%.3f s network on the path, want the answered select's 100 ms only", net)
	}
	for _, s := range x.Path.Segments {
		if s.PID == server.PID && s.BeginS < 1.3 {
			t.Errorf("segment %+v: the path is in the server before the request", s)
		}
	}
}

// A timed-out poll of another call (poll, then select) is another wait,
// however short.
func TestTimedOutPollOfAnotherCallSlept(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	x := clientFor(t, "timed-out-other-call", 1000,
		timedOut(r, "poll", 0, 600),
		answeredIn(r, "pselect6", 600.2, 1000),
	)
	if sleep := x.Path.ByReason["sleep"]; sleep < 0.59 {
		t.Errorf("path %v: the timed-out poll() is no tick of the select's wait", x.Path.ByReason)
	}
}

// curl's ticks, 200 ms then 1 s, each ended by the timer, on the way to its
// server's answer: one wait on the server, the network all along.
func TestClientTicksJoinedUntilTheAnswer(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	x := clientFor(t, "curl-ticks", 1500,
		timedOut(r, "poll", 0, 200),
		timedOut(r, "poll", 200.05, 1201),
		answeredIn(r, "poll", 1201.05, 1500),
	)
	if x.Verdict.Reason != "network" || x.Path.ByReason["network"] < 1.49 || x.Path.ByReason["sleep"] > 0 {
		t.Errorf("verdict %q (%v): curl's timed-out polls wait on its server", x.Verdict.Reason, x.Path.ByReason)
	}
}

// Seed 122: a parent's select on a pipe that its child writes to after
// 1.3 s of computing, in a program that opens a TCP connection later. The
// select waited on the child (ipc: a write to no socket ended it), and the
// path goes into the child's CPU.
func TestPollOnAChildsPipeInAProgramWithSockets(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	child := storetest.Thread{PID: 101, TID: 101, Comm: "child"}
	sel := r.Off(client, 0.5, 1300.5, event.ReasonIPC, "pselect6", child, 0.01)
	sel.WakerSyscall = 1 // write, on no socket: the pipe
	x := clientFor(t, "select-on-a-childs-pipe", 1400,
		&event.Fork{Header: client.At(0.2), ChildPID: 101, ChildTID: 101},
		&event.CPUTime{Header: child.At(1300.4), OnCPU: storetest.MS(1300)},
		&event.Exit{Header: child.At(1300.4), GroupDead: true},
		sel,
		// later, the program talks to a server over TCP: it has sockets
		answeredIn(r, "recvfrom", 1300.6, 1400),
		client.Blocked("recvfrom", 1300.6, 99.4, 3, 3, serverSock),
	)
	if x.Verdict.Reason != "cpu" || x.Path.ByReason["cpu"] < 1.29 {
		t.Fatalf("verdict %q (%v), want cpu: the child computed what the parent waited for", x.Verdict.Reason, x.Path.ByReason)
	}
	var into bool
	for _, l := range x.Path.Chain {
		into = into || l.WorkerTID == child.TID && l.Reason == "ipc"
	}
	if !into {
		t.Errorf("chain %+v: want the parent's ipc wait followed into the child", x.Path.Chain)
	}
}

// PostgreSQL's wait for a row lock under load: its first poll ends at
// deadlock_timeout (1 s, its timer), 40 ms of it queued for a CPU; it is
// preempted during its deadlock check, and polls again 4 ms later until
// the holder commits. One wait on the holder: the lock all along. The
// queueing is no part of the poll's timeout, and a wait for a CPU between
// two polls is no poll.
func TestDeadlockCheckUnderLoadIsOneLockWait(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	holder := storetest.Thread{PID: 300, TID: 300, Comm: "postgres"}
	first := timedOut(r, "epoll_wait", 0, 1040)
	first.Runq = storetest.MS(40)
	lock := r.Off(client, 1044, 2000, event.ReasonLock, "epoll_wait", holder, 0.01)
	x := clientFor(t, "deadlock-check-under-load", 2000,
		first,
		r.Off(client, 1040.5, 1043.5, event.ReasonRunqueue, "", storetest.Thread{}, 0),
		lock,
	)
	if x.Verdict.Reason != "lock" || x.Path.ByReason["lock"] < 1.9 || x.Path.ByReason["sleep"] > 0 {
		t.Errorf("verdict %q (%v): the deadlock check's timed-out poll is part of the wait on the holder", x.Verdict.Reason, x.Path.ByReason)
	}
}
