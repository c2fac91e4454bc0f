package critpath

// A wait in poll, select or epoll_wait is told by who ended it and from
// which end of a socket (offcpu.waker_side, read in the kernel at the
// wakeup from the socket the waker was sending on):
//   - woken by a server's answer ('server'): a client waiting on its
//     server, whatever else it polled: never waiting for work;
//   - woken by a client's request ('client'): a server waiting for work;
//   - neither (a pipe, a packet from another machine): waiting for work
//     unless the thread was seen moving socket data; ended by its own
//     timeout (the timer), a sleep (classify).
//
// A client polls with a timeout and polls again until the answer comes
// (curl wakes every 200 ms to 1 s): those timed-out polls are the same wait
// on the same server, and target_poll_runs gives them the answer's waker.
//
// for_work (source/sql/macros.sql) and target_poll_runs
// (explain/sql/target.sql) are these rules in SQL.

// pollJoinNS: a poll begun within this of the last one's end goes on waiting
// for the same thing (1000000 in target_poll_runs).
const pollJoinNS = 1_000_000

// outsidePollRuns is target_poll_runs' rule over one outside thread's waits, in
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
			iv.wakerOnSocket = answer.wakerOnSocket
		default:
			answer = nil
		}
	}
}
