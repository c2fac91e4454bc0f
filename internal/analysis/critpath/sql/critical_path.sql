-- What the critical path walks (walker.go): the target's waits and
-- threads (target_offcpu, target_threads: explain/sql/target.sql), and the
-- waits of a process outside the target that it waited on.

-- name: path_waits
-- The target's waits, by thread in time order.
-- Columns: pid, tid, start_ts, ts, runq_ns, reason, waker_pid, waker_tid,
-- waker_comm, object ('' for none), for_work, waker_on_socket.
SELECT pid, tid, start_ts, ts, runq_ns, reason, waker_pid, waker_tid,
  coalesce(waker_comm, ''), coalesce(object, ''), for_work, waker_on_socket FROM target_offcpu ORDER BY tid, start_ts;

-- name: path_threads
-- The target's threads, those that never went off CPU too: births (and who
-- forked them) and deaths, and names.
-- Columns: pid, tid, comm, born (NULL: before the recording), parent tid,
-- died (NULL: alive at its end).
SELECT t.pid, t.tid, t.comm, f.ts, f.tid, e.ts FROM target_threads t
  LEFT JOIN (SELECT child_tid, min(ts) AS ts, arg_min(tid, ts) AS tid FROM forks GROUP BY child_tid) f ON f.child_tid = t.tid
  LEFT JOIN (SELECT tid, max(ts) AS ts FROM exits GROUP BY tid) e ON e.tid = t.tid;

-- name: path_outside_waits
-- The waits of a process outside the target in the window, with the reasons
-- the target's get (target_offcpu) and its timed-out polls joined to the
-- answer that ends them as the target's are ({{runs}}); its calls were not
-- seen, so no poll of its counts as one of a thread that moved no socket
-- data.
-- Parameters: $p (UINTEGER): its pid; $b, $e (UBIGINT): the window.
-- Slots: {{runs}}, poll_runs over the CTE w (PollRuns).
-- Columns: tid, comm, start_ts, ts, runq_ns, reason, waker_pid, waker_tid,
-- waker_comm, object, for_work, waker_on_socket (as target_offcpu's), and
-- state and syscall, the facts graph.go reads to tell a poll no task was
-- seen ending (timedOutUnseen). A wait sent twice (by its own process's
-- history and, as the longest wait of a waker, by the history of a task it
-- woke: peers.bpf.h) is one, the copy that knows more of its end kept.
WITH o AS (SELECT DISTINCT ON (tid, start_ts, ts) * FROM offcpu WHERE pid = $p AND ts > $b AND start_ts < $e
  ORDER BY tid, start_ts, ts, waker_pid <> 0 DESC, waker_side IS NOT NULL DESC, reason = 'sleep' DESC),
w AS (
  SELECT o.tid, coalesce(o.comm, '') AS comm, o.start_ts, o.ts, o.runq_ns, o.state, o.syscall, o.reason,
         o.waker_pid, o.waker_tid, coalesce(o.waker_comm, '') AS waker_comm,
         coalesce(f.path, CASE WHEN o.waker_side = 'server' THEN coalesce(wf.local, wf.path) END, '') AS object,
         for_work(o.syscall, o.waker_side, o.reason, false, true) AS for_work, o.waker_side,
         coalesce(o.waker_ino <> 0, false) AS waker_on_socket
  FROM o LEFT JOIN syscall_raw c ON c.tid = o.tid AND c.ts = o.start_ts AND c.blocked
    LEFT JOIN file_names f ON f.dev = c.dev AND f.ino = c.ino AND f.gen = c.gen
    LEFT JOIN file_names wf ON wf.dev = o.waker_dev AND wf.ino = o.waker_ino AND wf.gen = o.waker_gen
         AND o.waker_side IS NOT NULL),
g AS (SELECT DISTINCT ON (tid, start_ts) * FROM {{runs}})
SELECT w.tid, w.comm, w.start_ts, w.ts, w.runq_ns, coalesce(g.reason, w.reason),
       coalesce(g.waker_pid, w.waker_pid), coalesce(g.waker_tid, w.waker_tid), coalesce(g.waker_comm, w.waker_comm),
       coalesce(g.object, w.object), w.for_work AND g.tid IS NULL, coalesce(g.waker_on_socket, w.waker_on_socket),
       w.state, coalesce(w.syscall, '')
FROM w LEFT JOIN g ON g.tid = w.tid AND g.start_ts = w.start_ts
ORDER BY w.tid, w.start_ts;
