-- A client's waits on its server (client_waits.go says the rules).

-- name: poll_runs
-- A run of polls of one thread, each begun within 10 ms of the last one's
-- end (what it ran between them, a preemption or two under load:
-- PostgreSQL's deadlock check between its two waits), in the same call
-- (syscall), that ends in a server's answer
-- or another process's signal (a lock it let go) is one wait on that
-- process: the polls before it that no socket's conversation ended (a
-- timeout) take its waker, reason and object. A client polls with a timeout
-- and polls again until the answer comes (curl wakes every 200 ms to 1 s,
-- PostgreSQL's deadlock check after deadlock_timeout, 1 s): a tick, at most
-- a second. A poll of another call, or one that ran out a longer timeout (a
-- select that sleeps, a wait on a socket nobody sends to, before a request
-- that a later poll waits on) is a wait of its own: it ends its run. The
-- recording holds no poll's descriptors, so the same call and a tick's
-- length are what tells the repeated poll of one wait from the next wait.
-- A poll's length is to its wakeup: its time queued for a CPU after it is
-- no part of its timeout, and a loaded machine's queue made a second's
-- poll look longer than a tick. Waits for a CPU between polls are no polls:
-- they neither end a run nor take its answer.
-- The one statement of the rule, for the target's waits (explain's
-- target_poll_runs) and an outside process's (path_outside_waits).
-- Slots: {{waits}}, the waits, a relation with columns tid, start_ts, ts,
-- syscall, reason, object, runq_ns, waker_pid, waker_tid, waker_comm,
-- waker_side and waker_on_socket (target_offcpu's).
-- Columns: tid, start_ts (a poll the run's answer takes), and the answer's
-- waker_pid, waker_tid, waker_comm, reason, object, waker_side,
-- waker_on_socket.
WITH p AS (
  SELECT tid, start_ts, ts, runq_ns, waker_side, waker_pid, waker_tid, waker_comm, reason, object, waker_on_socket,
         is_poll(syscall) AS poll,
         coalesce(waker_side = 'server' OR reason = 'lock' AND waker_pid <> 0, false) AS answered,
         lead(start_ts) OVER (PARTITION BY tid ORDER BY start_ts) AS next_start,
         lead(syscall) OVER (PARTITION BY tid ORDER BY start_ts) IS DISTINCT FROM syscall AS next_call
  FROM {{waits}} WHERE reason NOT IN ('runqueue', 'cpu-quota')),
r AS (
  -- 1.05 s: a tick of a second, and its timer's lateness.
  SELECT *, sum(CASE WHEN answered OR NOT poll OR next_start IS NULL OR next_call
                       OR next_start > ts + 10000000 OR ts - runq_ns - start_ts > 1050000000 THEN 1 ELSE 0 END)
              OVER (PARTITION BY tid ORDER BY start_ts DESC ROWS UNBOUNDED PRECEDING) AS run
  FROM p)
SELECT a.tid, a.start_ts, h.waker_pid, h.waker_tid, h.waker_comm, h.reason, h.object, h.waker_side, h.waker_on_socket
FROM r a JOIN r h ON h.tid = a.tid AND h.run = a.run AND h.answered AND h.poll
WHERE a.poll AND NOT a.answered AND a.waker_side IS NULL AND a.start_ts < h.start_ts
