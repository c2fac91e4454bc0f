-- Explain's sums over the target's tables (sql/target.sql), each a query
-- whose rows the explanation reads.

-- name: kernel_cpu
-- The target's time inside syscalls less the time it was off CPU there, by
-- syscall class: the kernel's part of its CPU time. Numeric tables only:
-- the io view names every row's file, which costs seconds on a recording of
-- millions of calls.
-- Columns: class VARCHAR, ns.
WITH inside AS (
    SELECT n.class, sum(c.wait_ns) AS ns FROM target_calls c JOIN syscall_names n USING (nr) GROUP BY n.class
    UNION ALL SELECT class, sum(total_ns) FROM syscall_totals WHERE is_target(pid) GROUP BY class
    UNION ALL SELECT 'unlink', sum(dur) FROM unlink_raw WHERE is_target(pid)),
  off AS (
    SELECT n.class, sum(o.off_ns) AS ns FROM target_offcpu o JOIN syscall_names n ON n.name = o.syscall GROUP BY 1)
SELECT i.class, greatest(sum(i.ns) - coalesce(any_value(off.ns), 0), 0)
FROM inside i LEFT JOIN off USING (class) WHERE i.class IS NOT NULL GROUP BY i.class;

-- name: kernel_cpu_sampled
-- kernel_cpu with no syscall hooked (the default level): from the timer
-- samples, each sample inside a syscall counting its thread's CPU time per
-- sample (sample_weights).
-- Columns: class VARCHAR, ns.
SELECT n.class, sum(w.ns) FROM samples s JOIN sample_weights() w USING (tid)
  JOIN syscall_names n ON n.nr = s.syscall_nr
WHERE is_target(s.pid) AND NOT s.user AND n.class IS NOT NULL AND n.class <> 'none' GROUP BY n.class;
