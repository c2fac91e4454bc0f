-- Folded stacks (stacks.go): off-CPU time by thread, reason and kernel
-- stack; on-CPU time by thread and sampled stack. Each takes $pids
-- (UINTEGER[]): only these processes, or NULL for all.

-- name: stacks_offcpu
-- Off-CPU time by thread, reason and kernel stack.
-- Parameters: $pids (UINTEGER[] or NULL).
-- Columns: pid, tid, reason, stack_id (-1: none), ns.
SELECT pid, tid, coalesce(reason, 'other'), coalesce(stack_id, -1), sum(off_ns)::UBIGINT
FROM offcpu WHERE $pids IS NULL OR pid IN (SELECT unnest($pids::UINTEGER[])) GROUP BY ALL;

-- name: stacks_sampled
-- The CPU samples (default level) folded: each stands for its thread's
-- on-CPU time divided by its samples.
-- Parameters: $pids (UINTEGER[] or NULL).
-- Columns: pid, tid, user (in user mode), stack_id, ns.
WITH w AS (
    SELECT s.tid, any_value(c.ns) / count(*) AS ns FROM samples s
    JOIN (SELECT tid, sum(oncpu_ns) AS ns FROM cputime GROUP BY tid) c USING (tid) GROUP BY s.tid)
SELECT s.pid, s.tid, s.user, s.stack_id, (count(*) * any_value(w.ns))::UBIGINT
FROM samples s JOIN w USING (tid) WHERE $pids IS NULL OR pid IN (SELECT unnest($pids::UINTEGER[])) GROUP BY ALL;

-- name: stacks_unsampled
-- The on-CPU time of threads with no CPU sample, with no stack.
-- Parameters: $pids (UINTEGER[] or NULL).
-- Columns: pid, tid, ns.
SELECT pid, tid, sum(oncpu_ns)::UBIGINT FROM cputime WHERE ($pids IS NULL OR pid IN (SELECT unnest($pids::UINTEGER[])))
  AND tid NOT IN (SELECT tid FROM samples) GROUP BY ALL;

-- name: stack_frames
-- Every kernel stack, outermost frame first, frames joined by chr(1).
-- Columns: stack_id, frames.
SELECT stack_id, array_to_string(list_reverse(frames), chr(1)) FROM stacks;

-- name: process_names
-- The latest name of every process.
-- Columns: pid, comm.
SELECT pid, comm FROM processes WHERE comm IS NOT NULL;

-- name: thread_names
-- The latest name of every thread.
-- Columns: tid, comm.
SELECT tid, comm FROM threads;
