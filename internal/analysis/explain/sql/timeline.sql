-- The thread timeline (timeline.go): the waits and lifetimes of the
-- threads it draws.

-- name: timeline_waits
-- The threads' waits in the window, clipped to it, by thread in time order.
-- Parameters: $tids (UINTEGER[]): the threads; $b, $e (UBIGINT): the window.
-- Columns: tid, start (clipped), end (clipped), runq_ns, reason.
SELECT tid, greatest(start_ts, $b), least(ts, $e), runq_ns, coalesce(reason, 'other') FROM offcpu
WHERE tid IN (SELECT unnest($tids::UINTEGER[])) AND ts > $b AND start_ts < $e ORDER BY tid, start_ts, ts;

-- name: thread_lifetimes
-- The threads' births and deaths, where the recording saw them.
-- Parameters: $tids (UINTEGER[]): the threads.
-- Columns: tid, born (NULL: not seen), died (NULL: not seen).
SELECT coalesce(f.tid, e.tid), f.ts, e.ts
FROM (SELECT child_tid AS tid, min(ts) AS ts FROM forks WHERE child_tid IN (SELECT unnest($tids::UINTEGER[])) GROUP BY 1) f
FULL JOIN (SELECT tid, max(ts) AS ts FROM exits WHERE tid IN (SELECT unnest($tids::UINTEGER[])) GROUP BY 1) e USING (tid);
