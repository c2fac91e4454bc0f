package explain

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/critpath"
	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// The critical path across processes, on hand-built recordings: a client
// (pid 100) waits 1 s in poll() until a process outside it ends the wait.
// What that process did meanwhile decides the verdict; where it was itself
// idle, the client's wait is said plainly and the process blamed.

var (
	client = storetest.Thread{PID: 100, TID: 100, Comm: "client"}
	server = storetest.Thread{PID: 200, TID: 201, Comm: "server"}
	holder = storetest.Thread{PID: 300, TID: 300, Comm: "holder"}
	// the server's end of the connection: its local address is the service's
	serverSock = event.FileRef{Dev: 9, Ino: 500, Kind: event.KindSocketInet}
	wal        = event.FileRef{Dev: 8 << 20, Ino: 77, Kind: event.KindRegular}
)

func crossProcess(t *testing.T, name string, evs ...event.Event) *Explanation {
	t.Helper()
	r := storetest.New(t, name, map[string]string{"level": "waits", "scope": "command", "command": "client",
		"target_pid": "100", "target_start_mono": strconv.FormatUint(storetest.At(0), 10),
		"target_end_mono": strconv.FormatUint(storetest.At(1000), 10), "duration_ns": strconv.FormatUint(storetest.MS(1000), 10),
		"exit_code": "0"})
	r.Add(&event.File{Header: server.At(0), Ref: serverSock, Path: "socket:[500]",
		Local: netip.MustParseAddrPort("127.0.0.1:8080"), Peer: netip.MustParseAddrPort("127.0.0.1:45000")},
		&event.File{Header: server.At(0), Ref: wal, Path: "/db/pg_wal/000000010000000000000001"})
	r.Add(evs...)
	return explainRecorded(t, r.Close(), 100)
}

// answered is the client's poll, 0 to 1000 ms, ended by th's answer from the
// server's end of a connection.
func answered(r *storetest.Recording, th storetest.Thread) *event.OffCPU {
	o := r.Off(client, 0, 1000, event.ReasonNetwork, "poll", th, 0.01)
	o.WakerSide, o.WakerFile = event.SideServer, serverSock
	return o
}

func outside(o *event.OffCPU) *event.OffCPU {
	o.Outside = true
	return o
}

func TestPathIntoAServerThatFsyncs(t *testing.T) {
	r := storetest.New(t, "unused", nil) // Off needs a recording for stacks only
	x := crossProcess(t, "server-fsync",
		answered(r, server),
		outside(r.Off(server, 0, 5, "idle", "epoll_wait", client, 0.01)),
		outside(r.Off(server, 10, 950, event.ReasonSync, "fdatasync", storetest.Thread{}, 0)),
		server.Blocked("fdatasync", 10, 940, 7, 0, wal),
	)
	if x.Verdict.Reason != "sync" {
		t.Fatalf("verdict %q (%v), want sync: the server's fsync", x.Verdict.Reason, x.Path.ByReason)
	}
	var seg *PathSegment
	for i := range x.Path.Segments {
		if s := &x.Path.Segments[i]; s.Reason == "sync" {
			seg = s
		}
	}
	if seg == nil || seg.PID != 200 || seg.Role != critpath.RoleOutside || seg.Object != "/db/pg_wal/000000010000000000000001" {
		t.Errorf("sync segment %+v: want the server's, outside, on its WAL file", seg)
	}
	if len(x.Path.Chain) == 0 || x.Path.Chain[0].WorkerPID != 200 || x.Path.Chain[0].WorkerRole != critpath.RoleOutside {
		t.Errorf("chain %+v: want a link into the server (pid 200), outside", x.Path.Chain)
	}
	if d := x.Verdict.Detail; d == nil || d.Who == nil || d.Who.TID != 100 {
		t.Errorf("verdict detail %+v: the client's thread waited", d)
	}
}

func TestPathIntoAnIdleLockHolder(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	x := crossProcess(t, "lock-holder",
		r.Off(client, 0, 1000, event.ReasonLock, "futex", holder, 0.01),
		// asleep since before capture (its history's first wait), then it lets go
		outside(r.Off(holder, 0, 990, event.ReasonSleep, "clock_nanosleep", storetest.Thread{}, 0)),
	)
	if x.Verdict.Reason != "lock" || x.Path.ByReason["lock"] < 0.98 {
		t.Fatalf("verdict %q (%v), want lock for the holder's sleep", x.Verdict.Reason, x.Path.ByReason)
	}
	var held bool
	for _, b := range x.Blame {
		held = held || b.PID == 300 && b.Activity == "lock"
	}
	if !held {
		t.Errorf("blame %+v: want the holder (pid 300) with activity lock", x.Blame)
	}
	if d := x.Verdict.Detail; d == nil || d.HeldUpBy == nil || d.HeldUpBy.PID != 300 {
		t.Errorf("verdict detail %+v: held up by the holder", d)
	}
}

func TestClientPollsJoinedUntilTheAnswer(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	x := crossProcess(t, "timed-out-polls",
		// curl's polls time out every 200 ms until the answer
		r.Off(client, 0, 200, event.ReasonIPC, "poll", storetest.Thread{}, 0),
		r.Off(client, 200.1, 400, event.ReasonIPC, "poll", storetest.Thread{}, 0),
		func() *event.OffCPU {
			o := answered(r, server)
			o.Time, o.Off = storetest.At(1000), storetest.MS(599.8)
			return o
		}(),
	)
	if x.Path.ByReason["network"] < 0.99 || x.Path.ByReason["idle"] > 0 {
		t.Errorf("path %v: the timed-out polls wait on the same server", x.Path.ByReason)
	}
}

func TestServerPollWokenByAClientIsIdle(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	o := r.Off(client, 0, 1000, event.ReasonNetwork, "epoll_wait", server, 0.01)
	o.WakerSide = event.SideClient
	x := crossProcess(t, "server-idle", o)
	if x.Path.ByReason["idle"] < 0.99 {
		t.Errorf("path %v: a poll woken by a client's request is waiting for work", x.Path.ByReason)
	}
}

// A server asleep in its handler while the client's other thread works (Go's
// runtime threads) is the client's wait on it, not a poller looked through
// into the client's busy thread: CI once found "python3 polled while the
// work was done by client".
func TestServerAsleepIsNotLookedThroughIntoTheClient(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	busy := storetest.Thread{PID: 100, TID: 102, Comm: "client"}
	x := crossProcess(t, "server-asleep",
		answered(r, server),
		r.Off(busy, 0, 0.5, event.ReasonRunqueue, "", storetest.Thread{}, 0.5),
		outside(r.Off(server, 10, 990, event.ReasonSleep, "clock_nanosleep", storetest.Thread{}, 0)),
	)
	if x.Verdict.Reason != "network" || x.Path.ByReason["network"] < 0.98 {
		t.Fatalf("verdict %q (%v), want network: the server slept in its handler", x.Verdict.Reason, x.Path.ByReason)
	}
	for _, l := range x.Path.Chain {
		if l.WorkerTID == busy.TID {
			t.Errorf("chain %+v goes back into the client's busy thread", x.Path.Chain)
		}
	}
}

// A server's poll ended by its client's request waited for work: the path
// does not go on into the client, whatever the client did before it sent
// (a request's first moments once walked into curl's CPU).
func TestServerIdleIsNotItsClientsWork(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	o := r.Off(client, 0, 1000, event.ReasonNetwork, "epoll_wait", server, 0.01)
	o.WakerSide = event.SideClient
	x := crossProcess(t, "server-idle-client-busy", o,
		outside(r.Off(server, 100, 900, event.ReasonSync, "fsync", storetest.Thread{}, 0)))
	if x.Path.ByReason["idle"] < 0.99 {
		t.Errorf("path %v: a poll woken by a client's request is waiting for work, not the client's disk", x.Path.ByReason)
	}
	for _, l := range x.Path.Chain {
		if l.WorkerPID == server.PID {
			t.Errorf("chain %+v goes on into the client that brought the work", x.Path.Chain)
		}
	}
}

// A network wait ended by a task that was not sending on a socket was ended
// by the network card: its receive path ran in a softirq on whatever task
// it interrupted. That task's doings (here a process in fdatasync) are no
// part of the wait: the path stays network, and nobody holds it up.
func TestNetworkWaitEndedByAnInterruptIsNotFollowed(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	x := crossProcess(t, "interrupted",
		r.Off(client, 0, 1000, event.ReasonNetwork, "recvfrom", server, 0.01), // no socket: a softirq's wakeup
		outside(r.Off(server, 10, 950, event.ReasonSync, "fdatasync", storetest.Thread{}, 0)),
		server.Blocked("fdatasync", 10, 940, 7, 0, wal),
	)
	if x.Verdict.Reason != "network" || x.Path.ByReason["sync"] > 0 {
		t.Fatalf("verdict %q (%v), want network: the interrupted process did not answer", x.Verdict.Reason, x.Path.ByReason)
	}
	for _, s := range x.Path.Segments {
		if s.PID == server.PID || s.BlockedByPID == server.PID {
			t.Errorf("segment %+v names the interrupted process", s)
		}
	}
}

// serverSegments are the path's segments of the server's thread.
func serverSegments(x *Explanation) []critpath.Segment {
	var out []critpath.Segment
	for _, s := range x.Path.Segments {
		if s.TID == server.TID {
			out = append(out, s)
		}
	}
	return out
}

// An outside process's polls that timed out before an answer are one wait
// on the answerer, as a target's are (critpath's poll_runs, one statement
// for both): the server polled its upstream three times, and the path
// says it waited on the network all along, none of it asleep.
func TestOutsidePollsJoinedUntilTheAnswer(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	upstream := event.FileRef{Dev: 9, Ino: 600, Kind: event.KindSocketInet}
	answer := outside(r.Off(server, 600.5, 990, event.ReasonNetwork, "poll", holder, 0.01))
	answer.WakerSide, answer.WakerFile = event.SideServer, upstream
	x := crossProcess(t, "outside-timed-out-polls",
		answered(r, server),
		outside(r.Off(server, 10, 300, event.ReasonIPC, "poll", storetest.Thread{}, 0)),
		outside(r.Off(server, 300.5, 600, event.ReasonIPC, "poll", storetest.Thread{}, 0)),
		answer,
	)
	segs := serverSegments(x)
	var network float64
	for _, s := range segs {
		if s.OwnReason == "sleep" || s.Reason == "sleep" || s.Reason == "idle" {
			t.Errorf("segment %+v: the server's timed-out polls wait on its upstream", s)
		}
		if s.Reason == "network" {
			network += s.DurS
		}
	}
	if network < 0.97 {
		t.Errorf("server's segments %+v: %.3f s on the network, want the 980 ms it polled", segs, network)
	}
}

// An outside process's poll that no task was seen ending timed out: the
// kernel notes a peer's waker only past a millisecond, and recordings made
// before the timer was noted say none. It slept (classify.TimedOut), and
// that stretch stays the client's wait on it.
func TestOutsidePollNoTaskEndedSlept(t *testing.T) {
	r := storetest.New(t, "unused", nil)
	x := crossProcess(t, "outside-poll-timed-out",
		answered(r, server),
		outside(r.Off(server, 10, 990, event.ReasonIPC, "poll", storetest.Thread{}, 0)),
	)
	var slept float64
	for _, s := range serverSegments(x) {
		if s.OwnReason == "sleep" && s.Reason == "network" && s.BlockedByPID == server.PID {
			slept += s.DurS
		}
	}
	if slept < 0.97 {
		t.Errorf("server's segments %+v: its timed-out poll is its sleep, charged to the client's wait on it", serverSegments(x))
	}
}
