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
// on the same server, and take the answer's waker (PollRuns). Only polls of
// the same call, each a tick of a second or less: a longer timed-out poll,
// or one of another call, is a wait of its own (a select that slept before
// the program sent its request), and keeps its reason.
//
// for_work (source/sql/macros.sql) and poll_runs (sql/client_waits.sql)
// are these rules in SQL, each written once.

// PollRuns is the query of the timed-out polls of runs that an answer ends
// (sql/client_waits.sql, poll_runs) over waits, a relation in
// target_offcpu's columns: each poll's tid and start_ts with the answer's
// waker, reason and object. The target's waits take them in explain
// (target_poll_runs), an outside process's as the graph loads them
// (path_outside_waits): one rule, one statement.
func PollRuns(waits string) string { return modules.Where("poll_runs", waits) }
