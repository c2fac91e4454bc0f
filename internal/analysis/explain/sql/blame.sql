-- Blame: other processes' part in the target's storage waits (disk-read,
-- disk-write, dirty-throttle, sync), read after sql/target.sql.

-- name: blame_has_storage_waits
-- Whether the target waited on storage at all (target_offcpu holds every
-- wait of the target, io_uring's turned into storage waits).
-- Parameters: $1 (BOOLEAN): answer true whatever (tests run every step).
-- Columns: one BOOLEAN.
SELECT $1 OR EXISTS (SELECT 1 FROM target_offcpu WHERE is_storage(reason));

-- name: target_waits
-- Makes target_waits: the target's waits on storage in the window, clipped
-- to it, less their run-queue tail. A request's path narrows them to the
-- threads it ran on, and widens the target to the processes it went
-- through (an upstream's worker waits on storage for it too).
-- Parameters: $b, $e (UBIGINT): the window; $pids (UINTEGER[]): the
-- target's processes; $tids (UINTEGER[]): only these threads, or NULL.
-- Columns: b, e (the clipped wait), ns (its time off CPU, waiting).
CREATE OR REPLACE TEMP TABLE target_waits AS
  SELECT greatest(start_ts, $b) AS b, least(ts, $e) AS e,
         least(ts, $e) - greatest(start_ts, $b) - least(runq_ns, least(ts, $e) - greatest(start_ts, $b)) AS ns
  FROM offcpu
  WHERE pid IN (SELECT unnest($pids::UINTEGER[])) AND ($tids IS NULL OR tid IN (SELECT unnest($tids::UINTEGER[])))
    AND is_storage(reason) AND ts > $b AND start_ts < $e;

-- name: target_spans
-- Makes target_spans: target_waits as disjoint spans (threads' waits
-- overlap): a block request then falls in at most one, found by an ASOF
-- join. A range join of requests against waits was quadratic: 4 s for 30k
-- of each.
-- Columns: b, e.
CREATE OR REPLACE TEMP TABLE target_spans AS
  WITH o AS (SELECT b, e, max(e) OVER (ORDER BY b, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_e FROM target_waits),
       g AS (SELECT b, e, sum(CASE WHEN prev_e IS NULL OR b > prev_e THEN 1 ELSE 0 END) OVER (ORDER BY b, e) AS island FROM o)
  SELECT min(b) AS b, max(e) AS e FROM g GROUP BY island;

-- name: blame_syncs
-- The sync calls other processes ran during the target's storage waits, by
-- process: found on the numeric table first (there are few).
-- Parameters: $pids (UINTEGER[]): the target's processes (target_waits').
-- Columns: pid, comm, syscall (one of its calls' names), overlap (ns of the
-- waits they overlapped, summed per wait), longest (ns), calls.
WITH s AS (
    SELECT r.ts, r.dur, r.pid, c.comm, n.name FROM syscall_raw r JOIN syscall_names n USING (nr) LEFT JOIN comms c USING (comm_id)
    WHERE r.nr IN (SELECT nr FROM syscall_names WHERE class = 'sync') AND r.pid NOT IN (SELECT unnest($pids::UINTEGER[])))
SELECT s.pid, any_value(s.comm), any_value(s.name), sum(least(s.ts + s.dur, w.e) - greatest(s.ts, w.b)), max(s.dur),
       count(DISTINCT s.ts)
FROM s JOIN target_waits w ON s.ts < w.e AND s.ts + s.dur > w.b GROUP BY s.pid;

-- name: blame_disk
-- Disk traffic during the target's storage waits, by operation, issuer,
-- dirtier of the data (dirtier: a write is charged to whoever dirtied it,
-- not to the flusher thread that wrote it out) and file. A stacked device's
-- lower half (a loop device's backing file) is counted once, on the device
-- above; metadata and journal (the block device itself) are everyone's.
-- Columns: op, pid, comm (the issuer's), dirtier_pid (NULL: unknown),
-- dirtier_comm, path, bytes.
WITH during AS (
    SELECT b.* FROM disk b ASOF JOIN target_spans w ON b.ts >= w.b WHERE b.ts <= w.e AND NOT b.lower)
SELECT b.op, b.pid, coalesce(b.comm, ''), d.pid, coalesce(d.comm, ''), b.path, sum(b.bytes)
FROM during b LEFT JOIN dirtier() d ON d.dev = b.fdev AND d.ino = b.ino AND d.gen = b.gen
WHERE b.op IN ('read', 'write') AND b.bytes > 0
  AND coalesce(b.fkind, '') <> 'blockdev'
GROUP BY ALL;
