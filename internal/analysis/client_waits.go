package analysis

// A wait in poll, select or epoll_wait is told by who ended it and from
// which end of a socket (offcpu.waker_side, read in the kernel at the
// wakeup from the socket the waker was sending on):
//   - woken by a server's answer ('server'): a client waiting on its
//     server, whatever else it polled: never waiting for work;
//   - woken by a client's request ('client'): a server waiting for work;
//   - neither (a timer, a pipe, a packet from another machine): as before,
//     waiting for work unless the thread was seen moving socket data.
//
// A client polls with a timeout and polls again until the answer comes
// (curl wakes every 200 ms to 1 s): those timed-out polls are the same wait
// on the same server, and pollRunsSQL gives them the answer's waker.

// forWorkSQL is for_work for the offcpu rows aliased o: the target's
// (target_offcpu, in a query where socket_movers is defined: idle tells a
// poll no answer ended by the thread's socket traffic) and an outside
// process's (unmoved ""; its calls were not seen: such a poll is a sleep,
// outside_path.go). A server's master waiting for a signal (nginx in
// sigsuspend, a supervisor in pause) waits for work too, unless another
// process's kill ended it as a lock (classify: PostgreSQL's latches).
func forWorkSQL(o, unmoved string) string {
	quiet := "false"
	if unmoved != "" {
		quiet = o + `.syscall IN (` + pollSyscalls + `) AND ` + unmoved
	}
	return `coalesce(CASE WHEN ` + o + `.waker_side = 'server' THEN false
	    WHEN ` + o + `.waker_side = 'client' AND ` + o + `.syscall IN (` + pollSyscalls + `) THEN true
	    ELSE ` + o + `.syscall IN ('accept','accept4') OR (` + quiet + `)
	      OR ` + o + `.syscall IN (` + signalWaitSyscalls + `) AND ` + o + `.reason <> 'lock' END, false)`
}

// signalWaitSyscalls wait for a signal and nothing else.
const signalWaitSyscalls = `'rt_sigsuspend','pause','rt_sigtimedwait'`

// pollRunsSQL updates table t (target_offcpu's shape): a run of polls of one
// thread, each begun within a millisecond of the last one's end, that ends
// in a server's answer or another process's signal (a lock it let go: see
// classify) is one wait on that process: the polls that timed out before it
// take its waker, reason and object. (outsidePollRuns is the same rule for
// an outside process's waits.)
func pollRunsSQL(t string) string {
	return `UPDATE ` + t + ` t SET waker_pid = g.waker_pid, waker_tid = g.waker_tid, waker_comm = g.waker_comm,
	    reason = g.reason, object = g.object, for_work = false, waker_side = g.waker_side
	  FROM (
	    WITH p AS (
	      SELECT tid, start_ts, ts, waker_side, waker_pid, waker_tid, waker_comm, reason, object,
	             syscall IN (` + pollSyscalls + `) AS poll,
	             coalesce(waker_side = 'server' OR reason = 'lock' AND waker_pid <> 0, false) AS answered,
	             lead(start_ts) OVER (PARTITION BY tid ORDER BY start_ts) AS next_start
	      FROM ` + t + `),
	    r AS (
	      SELECT *, sum(CASE WHEN answered OR NOT poll OR next_start IS NULL
	                           OR next_start > ts + 1000000 THEN 1 ELSE 0 END)
	                  OVER (PARTITION BY tid ORDER BY start_ts DESC ROWS UNBOUNDED PRECEDING) AS run
	      FROM p)
	    SELECT a.tid, a.start_ts, h.waker_pid, h.waker_tid, h.waker_comm, h.reason, h.object, h.waker_side
	    FROM r a JOIN r h ON h.tid = a.tid AND h.run = a.run AND h.answered AND h.poll
	    WHERE a.poll AND NOT a.answered AND a.waker_side IS NULL AND a.start_ts < h.start_ts) g
	  WHERE t.tid = g.tid AND t.start_ts = g.start_ts`
}

// pollJoinNS: a poll begun within this of the last one's end goes on waiting
// for the same thing.
const pollJoinNS = 1_000_000

// outsidePollRuns is pollRunsSQL's rule over one outside thread's waits, in
// time order: polls that timed out (sleep) before an answered one, each
// begun within pollJoinNS of the last one's end, take its reason and waker.
func outsidePollRuns(offs []pathInterval) {
	var answer *pathInterval
	for i := len(offs) - 1; i >= 0; i-- {
		iv := &offs[i]
		switch {
		case !iv.poll:
			answer = nil
		case iv.answered:
			answer = iv
		case answer != nil && iv.reason == "sleep" && i+1 < len(offs) && offs[i+1].start <= iv.end+pollJoinNS:
			iv.reason, iv.object, iv.forWork = answer.reason, answer.object, false
			iv.wakerPID, iv.wakerTID, iv.wakerComm = answer.wakerPID, answer.wakerTID, answer.wakerComm
		default:
			answer = nil
		}
	}
}
