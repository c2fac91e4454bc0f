-- The sampled capture's looks (sampled.go): the facts classify names, read
-- in Go, which decides each look's reason (classify.SampleReason).

-- name: sampled_looks
-- Every look at a thread, in time order.
-- Columns: pid, tid, comm, state, syscall_nr, fkind, object, wchan,
-- stack_id, ran_ns, run_delay_ns, interval_ns, was_runnable, throttled,
-- sockets, on_path, ts, timeout_at, reclaim.
SELECT r.pid, r.tid, coalesce(c.comm, ''), r.state, r.syscall_nr, r.fkind, coalesce(r.object, ''), coalesce(r.wchan, ''),
  r.stack_id, r.ran_ns, r.run_delay_ns, r.interval_ns, r.was_runnable, r.throttled, r.sockets, r.on_path,
  r.ts, r.timeout_at, r.reclaim
FROM proc_samples_raw r LEFT JOIN comms c USING (comm_id) ORDER BY r.ts, r.pid, r.tid;

-- name: sampled_stacks
-- The stacks the looks read (root only).
-- Columns: stack_id, frames.
SELECT stack_id, frames FROM stacks WHERE stack_id IN (SELECT DISTINCT stack_id FROM proc_samples_raw);

-- name: sampled_ticks
-- The ticks, and those whose wall time was charged to a thread.
-- Columns: ticks, charged, first ts, last ts.
SELECT count(DISTINCT ts), count(DISTINCT ts) FILTER (WHERE on_path), coalesce(min(ts), 0), coalesce(max(ts), 0)
FROM proc_samples_raw;
