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

-- name: thread_offcpu
-- Each target thread's off-CPU time in the window by reason and state, the
-- intervals clipped to it, the run-queue part (the interval's tail) apart,
-- and told idle or not. Idle waits are no slowness of their own: waiting for
-- work (target_offcpu.for_work), or a hand-off to a traced child or thread
-- whose end it waited for (a wait4, a join: woken by its exit; or a wait for
-- children that had not ended when capture did). The critical path follows
-- those into the work. Waits that traced threads end while they go on (a
-- lock a sibling held, a pipe it fed) stay under their reason: contention
-- between threads is slowness, and stays visible.
-- Parameters: $b, $e (UBIGINT): the window.
-- Columns: pid, tid, comm (latest), reason, state, off_ns (less the run
-- queue), runq_ns, idle BOOLEAN.
WITH clipped AS (
    SELECT o.*, greatest(least(o.ts, $e) - greatest(o.start_ts, $b), 0) AS off_c,
           greatest(least(o.ts, $e) - greatest(o.ts - o.runq_ns, $b), 0) AS runq_c
    FROM target_offcpu o)
SELECT o.pid, o.tid, arg_max(o.comm, o.ts), o.reason, o.state,
  sum(o.off_c - least(o.runq_c, o.off_c)), sum(least(o.runq_c, o.off_c)),
  coalesce(
    (o.for_work
     OR (o.waker_tid <> o.tid AND is_target(o.waker_pid) AND (o.reason = 'child' OR EXISTS (
         SELECT 1 FROM exits e WHERE e.tid = o.waker_tid AND e.ts BETWEEN o.ts - o.runq_ns - 5000000 AND o.ts)))
     OR (o.reason = 'child' AND o.waker_pid = 0 AND o.pid IN (SELECT ppid FROM existing UNION SELECT pid FROM forks))),
    false) AS idle
FROM clipped o GROUP BY o.pid, o.tid, o.reason, o.state, idle;

-- name: thread_oncpu
-- Each target thread's on-CPU time.
-- Columns: pid, tid, comm (latest), oncpu_ns.
SELECT pid, tid, arg_max(comm, ts), sum(oncpu_ns) FROM cputime WHERE is_target(pid) GROUP BY pid, tid;

-- name: thread_io
-- Each target thread's bytes read and written.
-- Columns: tid, rbytes, wbytes.
SELECT tid, sum(rbytes), sum(wbytes) FROM target_io GROUP BY tid;

-- name: thread_top_file
-- The file each target thread spent most time on in syscalls, and what it
-- read from and wrote to it.
-- Columns: tid, path, rbytes, wbytes.
SELECT tid, arg_max(path, w), arg_max(r, w), arg_max(wr, w) FROM (
    SELECT tid, path, sum(wait_ns) AS w, sum(rbytes) AS r, sum(wbytes) AS wr
    FROM target_io WHERE fkind = 'file' AND path IS NOT NULL GROUP BY tid, path)
GROUP BY tid;

-- name: target_created
-- Makes target_created (dev, ino, gen): the files the target created: opened
-- with O_CREAT (64) by a call that succeeded, and first seen empty.
CREATE OR REPLACE TEMP TABLE target_created AS
  SELECT DISTINCT dev, ino, gen FROM syscall_raw i
  WHERE is_target(i.pid) AND nr IN (SELECT nr FROM syscall_names WHERE class = 'open') AND (flags & 64) <> 0 AND ret >= 0
    AND (dev, ino, gen) IN (SELECT dev, ino, gen FROM files GROUP BY dev, ino, gen HAVING arg_min(size, ts) = 0);

-- name: target_created_waits
-- Makes target_created at the default level, where no open was hooked: a
-- file first seen empty when the target dirtied it was created (or
-- truncated) by the target.
CREATE OR REPLACE TEMP TABLE target_created AS
  SELECT DISTINCT dev, ino, gen FROM dirtied i
  WHERE is_target(i.pid) AND (dev, ino, gen) IN (SELECT dev, ino, gen FROM files GROUP BY dev, ino, gen HAVING arg_min(size, ts) = 0);

-- name: file_use
-- Per file the target touched (after target_created): bytes, operations,
-- time inside syscalls, whether the target created it and whether it is
-- gone.
-- Columns: path (or inode:[ino]), rbytes, wbytes, ops, wait_ns, created,
-- deleted.
SELECT coalesce(i.path, 'inode:[' || i.ino || ']'),
  sum(i.rbytes), sum(i.wbytes), sum(i.ops), sum(i.wait_ns),
  coalesce(bool_or((i.dev, i.ino, i.gen) IN (SELECT * FROM target_created)), false),
  coalesce(bool_or(f.deleted), false) OR coalesce(bool_or(u.path IS NOT NULL), false)
FROM target_io i LEFT JOIN file_names f USING (dev, ino, gen)
  LEFT JOIN (SELECT DISTINCT path FROM unlinks WHERE ret = 0) u ON u.path = i.path
WHERE i.fkind = 'file'
GROUP BY 1;

-- name: peer_use
-- The target's traffic by peer: bytes each way and time inside socket
-- syscalls. A socket met first in /proc (a connection older than an attach)
-- is of a family /proc does not tell (socket-other) until the end's
-- description names its addresses.
-- Columns: peer, rbytes, wbytes, wait_ns.
SELECT peer, sum(rbytes), sum(wbytes), sum(wait_ns)
FROM target_io WHERE fkind IN ('socket', 'socket-other') AND peer IS NOT NULL GROUP BY 1 ORDER BY 4 DESC, 1;

-- name: peer_closed_bytes
-- The bytes the kernel counted on the target's TCP connections, by peer
-- (tcp_bytes: each connection's totals as it closed), for the default
-- level, where no socket call was hooked to count them.
-- Columns: peer, received, sent, connections (with totals).
WITH socks AS (SELECT DISTINCT peer, dev, ino, gen FROM target_io WHERE fkind IN ('socket', 'socket-other') AND peer IS NOT NULL),
     tb AS (SELECT dev, ino, max(received) AS r, max(sent) AS w FROM tcp_bytes GROUP BY ALL)
SELECT s.peer, sum(tb.r), sum(tb.w), count(tb.r) FROM socks s JOIN tb USING (dev, ino) GROUP BY s.peer;

-- name: after_exit
-- Block writes of data the target dirtied, after it exited: the kernel
-- still flushing its pages.
-- Parameters: $end (UBIGINT): the target's end.
-- Columns: bytes, ns (from the end to the last write), paths (newline
-- separated).
SELECT sum(b.bytes), max(b.ts) - $end, coalesce(string_agg(DISTINCT f.path, chr(10)), '')
FROM block b JOIN (SELECT DISTINCT dev, ino, gen FROM dirtied d WHERE is_target(d.pid)) t
  ON t.dev = b.fdev AND t.ino = b.ino AND t.gen = b.gen
LEFT JOIN file_names f ON f.dev = b.fdev AND f.ino = b.ino AND f.gen = b.gen
WHERE b.ts > $end AND b.op = 'write';

-- name: process_life
-- A process's birth and death where the recording saw them: its fork, and
-- its last thread's exit (which need not be the main one's: Go's).
-- Parameters: $pid (UINTEGER).
-- Columns: born, died (ns; NULL: not seen).
SELECT (SELECT min(ts) FROM forks WHERE child_pid = $pid AND child_tid = $pid),
  (SELECT max(ts) FROM exits WHERE pid = $pid AND group_dead);

-- name: disk_read_calls
-- The target's threads' disk-read waits by syscall (off CPU, without the
-- run queue's tail): what a read of the disk was for, a file's data or the
-- filesystem's own (getdents64 reading a directory, newfstatat an inode).
-- Columns: tid, syscall ('' unknown), waits, wait_ns.
SELECT tid, coalesce(syscall, ''), count(*), sum(off_ns - runq_ns)
FROM target_offcpu WHERE reason = 'disk-read' GROUP BY ALL;

-- name: metadata_read_bytes
-- Bytes the target read from disk that belong to no file: directories,
-- inodes and the journal, through the block device's own cache.
-- Parameters: $b, $e (UBIGINT): the window (completions in it).
-- Columns: bytes.
SELECT coalesce(sum(bytes), 0) FROM disk
WHERE is_target(pid) AND op = 'read' AND fkind = 'blockdev' AND NOT lower AND ts BETWEEN $b AND $e;

-- name: cpu_quota
-- The CPU quota of the cgroup of the target's process $pid (any of the
-- target's when $pid has none) that held it off the CPU, and what the
-- kernel counted of its throttling during the capture: its cpu.stat at the
-- end less what the capture read at the first throttled wait. A container's
-- counts since it began (days of them) say nothing of this window. 0 when
-- the cgroup was gone by the end.
-- Parameters: $pid (UINTEGER).
-- Columns: cgroup, version, quota_us, period_us, periods, throttled, throttled_ns.
WITH first AS (
    SELECT * FROM cpu_quotas WHERE phase = 'first' AND is_target(pid)
    ORDER BY pid = $pid DESC, ts LIMIT 1)
SELECT f.cgroup, f.version, f.quota_us, f.period_us,
       coalesce(e.periods - f.periods, 0), coalesce(e.throttled - f.throttled, 0),
       coalesce(e.throttled_ns - f.throttled_ns, 0)
FROM first f LEFT JOIN (SELECT * FROM cpu_quotas WHERE phase = 'end') e
     ON e.cgroup = f.cgroup AND e.periods >= f.periods AND e.throttled >= f.throttled AND e.throttled_ns >= f.throttled_ns
ORDER BY e.ts DESC NULLS LAST LIMIT 1;

-- name: memory_limit
-- The limited memory cgroup of the target's process $pid (any of the
-- target's when $pid's is not known), with the file bytes its tasks read
-- again after its reclaim evicted them, between the first reading (at a
-- process's first uninterruptible wait) and the end of the capture.
-- Parameters: $pid (UINTEGER).
-- Columns: cgroup, version, limit_bytes, high_bytes, reread_bytes.
WITH first AS (
    SELECT * FROM memory_limits WHERE phase = 'first' AND is_target(pid)
    ORDER BY pid = $pid DESC, ts LIMIT 1)
SELECT f.cgroup, f.version, f.limit_bytes, f.high_bytes,
       CASE WHEN e.refault_bytes > f.refault_bytes THEN e.refault_bytes - f.refault_bytes ELSE 0 END
FROM first f LEFT JOIN (SELECT * FROM memory_limits WHERE phase = 'end') e USING (cgroup)
ORDER BY e.ts DESC NULLS LAST LIMIT 1;

-- name: process_cgroups
-- Each target process's cgroup path, as /proc gave it when it exec'd or
-- when capture met it (attach); the latest. {{existing}} is the existing
-- table's rows with a cgroup, or none when it is empty.
-- Columns: pid, cgroup.
SELECT pid, arg_max(cgroup, ts) FROM (
    SELECT pid, ts, cgroup FROM execs WHERE is_target(pid) AND cgroup <> ''
    UNION ALL {{existing}})
GROUP BY pid;

-- name: io_limit
-- The I/O limits of the target's process $pid's own cgroup (any of the
-- target's when $pid's are not known), on the device the target moved the
-- most bytes on among those limited.
-- Parameters: $pid (UINTEGER).
-- Columns: cgroup, version, device name, read_bps, write_bps, read_iops, write_iops.
SELECT l.cgroup, l.version, coalesce(d.name, ''), l.read_bps, l.write_bps, l.read_iops, l.write_iops
FROM io_limits l LEFT JOIN devices d USING (dev)
     LEFT JOIN (SELECT dev, sum(bytes) AS b FROM block_raw WHERE is_target(pid) GROUP BY dev) u USING (dev)
WHERE is_target(l.pid)
ORDER BY l.pid = $pid DESC, coalesce(u.b, 0) DESC, l.ts LIMIT 1;
