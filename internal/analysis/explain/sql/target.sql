-- The target's waits and I/O: the temporary tables every explanation of a
-- target (explain, requests) reads, built once per run in this order, on the
-- connection the run holds. The target's processes are target_pids.

-- name: target_children
-- Every parent and child the recording knows: the forks it saw, and the
-- processes there when capture began (attach), children in pid order (not
-- in the order a hash table held them). TargetSet walks them from a pid;
-- Parents maps each child to its parent.
-- Columns: pid, child_pid.
SELECT pid, child_pid FROM forks WHERE child_pid <> pid
UNION SELECT DISTINCT ppid, pid FROM existing WHERE ppid <> pid
ORDER BY 1, 2;

-- name: target_pids
-- Makes target_pids (pid UINTEGER): the target's processes.
-- Parameters: $1 (UINTEGER[]): their pids.
DELETE FROM target_pids;
INSERT INTO target_pids SELECT unnest($1::UINTEGER[]);

-- name: target_offcpu
-- Makes target_offcpu: the target's off-CPU intervals in the window, each
-- with what it waited on.
-- Parameters: $b, $e (UBIGINT): the window, CLOCK_MONOTONIC ns.
-- Columns: the offcpu view's ts, start_ts, off_ns, runq_ns, pid, tid, comm,
-- state, reason, stack_id, syscall, waker_pid, waker_tid, waker_comm, and
--   object VARCHAR: the file or peer of the syscall in progress (a blocked
--     syscall, streamed at every level), else of the server whose answer
--     ended it (a socket with no side, a UDP server's that answered from a
--     socket with no connection, counts as a server's in a program that
--     serves no one); io_uring's pending operations' (target_uring);
--   for_work BOOLEAN: waiting for work that had not come (for_work), only
--     in a process that serves (serving: it waited in accept or was woken
--     by a client's request, a call of it accepted or listened, or attach
--     found it holding a listening socket: meta listening_pids). A poll
--     counts when its thread moved no socket data. A thread moved socket
--     data if a call of its was seen doing so: a blocked call, a counted one
--     (--syscalls), or one the CPU sampler found it in (the default level
--     sees no call that does not wait: a client's sends and receives after
--     its poll never do). Over a Unix socket only receiving counts: a logger
--     that sends to syslog is not in a conversation, a client that reads its
--     server's replies is (pgbench over the socket of a local PostgreSQL).
--     Only a poll asks it (for_work), so it is asked only of the threads
--     that polled (polling): at --full the calls are every one the target
--     made, 0.1-0.3 s to scan for threads no poll asks about;
--   waker_side VARCHAR: the offcpu view's;
--   waker_on_socket BOOLEAN: the waker was sending on a socket when it woke
--     the thread (the kernel described that socket): a hop over the
--     socket, not a device's interrupt that ran on the waker's CPU.
-- A target that never went off CPU gets target_offcpu_empty instead: this
-- shape without the query (16 ms to plan). A test keeps the two the same.
-- Slots: {{calls}}, the target's blocked calls (target_offcpu_calls),
-- {{call_movers}}, its threads seen moving socket data in a call
-- (target_offcpu_call_movers), and {{call_servers}}, its processes seen
-- accepting or listening in a call (target_offcpu_call_servers): each an
-- empty relation in its shape when no call was streamed (a quarter of the
-- statement's planning).
CREATE OR REPLACE TEMP TABLE target_offcpu AS
  WITH o AS (SELECT * FROM offcpu WHERE is_target(pid) AND ts > $b AND start_ts < $e),
  calls AS ({{calls}}),
  moving AS (SELECT nr, name FROM syscall_names WHERE class IN ('read', 'write', 'net') AND name NOT IN ('accept', 'accept4')),
  receiving AS (SELECT nr, name FROM syscall_names WHERE name IN ('read', 'readv', 'recvfrom', 'recvmsg')),
  inet AS (SELECT kind FROM kinds WHERE name = 'socket'),
  unix AS (SELECT kind FROM kinds WHERE name = 'unix'),
  polling AS (SELECT DISTINCT tid FROM o WHERE is_poll(syscall)),
  socket_movers AS (
    SELECT tid FROM ({{call_movers}})
    UNION
    SELECT DISTINCT tid FROM samples WHERE is_target(pid) AND tid IN (SELECT tid FROM polling) AND (fkind IN (SELECT kind FROM inet) AND syscall_nr IN (SELECT nr FROM moving)
      OR fkind IN (SELECT kind FROM unix) AND syscall_nr IN (SELECT nr FROM receiving))),
  serving AS (
    SELECT DISTINCT pid FROM o WHERE syscall IN ('accept', 'accept4') OR waker_side = 'client'
    UNION
    SELECT unnest(string_split(value, ' '))::UINTEGER FROM meta WHERE key = 'listening_pids' AND value <> ''
    UNION
    SELECT DISTINCT pid FROM ({{call_servers}}))
  SELECT o.ts, o.start_ts, o.off_ns, o.runq_ns, o.pid, o.tid, o.comm, o.state, o.reason, o.stack_id,
         o.syscall, o.waker_pid, o.waker_tid, o.waker_comm,
         coalesce(CASE WHEN c.end_ts >= o.ts - o.runq_ns THEN c.object END,
                  CASE WHEN o.waker_side = 'server' OR o.waker_side IS NULL AND o.pid NOT IN (SELECT pid FROM serving)
                       THEN coalesce(wf.local, wf.path) END) AS object,
         for_work(o.syscall, o.waker_side, o.reason, o.tid NOT IN (SELECT tid FROM socket_movers),
                  o.pid IN (SELECT pid FROM serving)) AS for_work, o.waker_side,
         coalesce(o.waker_ino <> 0, false) AS waker_on_socket
  FROM o ASOF LEFT JOIN calls c ON c.tid = o.tid AND c.ts <= o.start_ts
    LEFT JOIN file_names wf ON wf.dev = o.waker_dev AND wf.ino = o.waker_ino AND wf.gen = o.waker_gen;

-- name: target_offcpu_calls
-- target_offcpu's {{calls}}: the target's blocked calls, each with its file
-- or peer. Columns: tid, ts, end_ts, object.
SELECT s.tid, s.ts, s.ts + s.dur AS end_ts, coalesce(f.peer, f.path) AS object
FROM syscall_raw s LEFT JOIN file_names f USING (dev, ino, gen)
WHERE is_target(s.pid) AND s.blocked

-- name: target_offcpu_call_movers
-- target_offcpu's {{call_movers}}: the target's threads that polled
-- (polling) seen moving socket data in a streamed or counted call (its CTEs
-- moving, receiving, inet and unix say which). Columns: tid.
SELECT DISTINCT tid FROM syscall_raw WHERE is_target(pid) AND tid IN (SELECT tid FROM polling) AND (fkind IN (SELECT kind FROM inet) AND nr IN (SELECT nr FROM moving)
  OR fkind IN (SELECT kind FROM unix) AND nr IN (SELECT nr FROM receiving))
UNION
SELECT DISTINCT tid FROM syscall_totals WHERE is_target(pid) AND tid IN (SELECT tid FROM polling) AND (fkind = 'socket' AND name IN (SELECT name FROM moving)
  OR fkind = 'unix' AND name IN (SELECT name FROM receiving))

-- name: target_offcpu_call_servers
-- target_offcpu's {{call_servers}}: the target's processes seen listening
-- or accepting in a streamed or counted call (a server's accept that did not
-- wait: nginx accepts after its poll). Columns: pid.
SELECT DISTINCT pid FROM syscall_raw WHERE is_target(pid)
  AND nr IN (SELECT nr FROM syscall_names WHERE name IN ('accept', 'accept4', 'listen'))
UNION
SELECT DISTINCT pid FROM syscall_totals WHERE is_target(pid) AND name IN ('accept', 'accept4', 'listen')

-- name: target_offcpu_empty
-- Makes target_offcpu with no row, for a target that never went off CPU.
CREATE OR REPLACE TEMP TABLE target_offcpu (ts UBIGINT, start_ts UBIGINT, off_ns UBIGINT,
  runq_ns UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, state VARCHAR, reason VARCHAR, stack_id INTEGER,
  syscall VARCHAR, waker_pid UINTEGER, waker_tid UINTEGER, waker_comm VARCHAR, object VARCHAR, for_work BOOLEAN,
  waker_side VARCHAR, waker_on_socket BOOLEAN);

-- name: target_poll_runs
-- Updates target_offcpu: a client's polls that timed out before its
-- server's answer (or another process's signal) take the answer's waker,
-- reason and object, and are not for work.
-- Slots: {{runs}}, critpath's poll_runs over target_offcpu (critpath.PollRuns):
-- the rule is written there once, for the target's waits and an outside
-- process's.
UPDATE target_offcpu t SET waker_pid = g.waker_pid, waker_tid = g.waker_tid, waker_comm = g.waker_comm,
    reason = g.reason, object = g.object, for_work = false, waker_side = g.waker_side, waker_on_socket = g.waker_on_socket
  FROM {{runs}} g
  WHERE t.tid = g.tid AND t.start_ts = g.start_ts;

-- name: target_threads
-- Makes target_threads: each target thread's latest name, from the small
-- tables (the threads view reads every syscall for it).
-- Columns: pid UINTEGER, tid UINTEGER, comm VARCHAR (never empty).
CREATE OR REPLACE TEMP TABLE target_threads AS
  SELECT pid, tid, arg_max(comm, ts) AS comm FROM (
    SELECT pid, tid, comm, ts FROM target_offcpu
    UNION ALL SELECT pid, tid, comm, ts FROM cputime WHERE is_target(pid)
    UNION ALL SELECT pid, tid, comm, ts FROM execs WHERE is_target(pid)
    UNION ALL SELECT pid, tid, comm, ts FROM existing WHERE is_target(pid))
  WHERE comm IS NOT NULL AND comm <> '' GROUP BY pid, tid;

-- name: target_uring
-- Updates target_offcpu: the submitter of io_uring operations waits in
-- io_uring_enter for their completions, and classify could tell nothing
-- else of the wait (other): the longest operation in flight then says what
-- it waited for (ring_reason, classify's rule: network, disk-read,
-- disk-write, sync, other) and its object.
UPDATE target_offcpu t SET reason = r.reason, object = r.object FROM (
    SELECT t.tid, t.start_ts, arg_max(ring_reason(u.class, u.fkind), u.dur) AS reason,
      arg_max(coalesce(u.peer, u.path), u.dur) AS object
    FROM target_offcpu t JOIN uring_io u ON u.pid = t.pid AND u.ts < t.ts AND u.ts + u.dur > t.start_ts
    WHERE t.syscall = 'io_uring_enter' AND t.reason = 'other'
    GROUP BY t.tid, t.start_ts) r
  WHERE t.tid = r.tid AND t.start_ts = r.start_ts;

-- name: target_io_inputs
-- Whether the default level saw any I/O of the target beyond the dirtied
-- pages: a block request it issued (or a kworker for it:
-- target_dispatched_reads), or a CPU sample in a call on a file.
-- Columns: inputs BOOLEAN.
SELECT EXISTS (SELECT 1 FROM block_raw WHERE is_target(pid))
  OR EXISTS (SELECT 1 FROM samples s WHERE is_target(s.pid) AND sample_on_file(s.user, s.ino, s.path))
  OR EXISTS (SELECT 1 FROM target_dispatched_reads);

-- name: target_calls
-- Makes target_calls: the target's streamed calls summed per thread, file
-- and syscall, on the numeric table: one pass over what can be millions of
-- rows, which the rest reads instead.
-- Columns: tid, dev, ino, gen, fkind (kinds.kind), nr, ret_bytes (the
-- positive returns' sum), ops (calls), wait_ns (their time).
CREATE OR REPLACE TEMP TABLE target_calls AS
  SELECT tid, dev, ino, gen, fkind, nr, sum(CASE WHEN ret > 0 THEN ret ELSE 0 END) AS ret_bytes,
         count(*) AS ops, sum(dur) AS wait_ns
  FROM syscall_raw WHERE is_target(pid) GROUP BY ALL;

-- name: target_calls_empty
-- Makes target_calls with no row, for a recording without a streamed call
-- or a wait in one. A test keeps the two the same.
CREATE OR REPLACE TEMP TABLE target_calls (tid UINTEGER, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind UTINYINT,
  nr USMALLINT, ret_bytes HUGEINT, ops BIGINT, wait_ns HUGEINT);

-- name: target_io
-- Makes target_io: the target's I/O, one shape for syscalls and io_uring
-- operations, summed per thread, file and syscall: every explanation sums
-- it several ways. An io_uring operation's time is not a thread's; the time
-- the submitter waited in io_uring_enter for it is.
-- Columns: tid, path, peer, fkind (VARCHAR), dev, ino, gen, name (syscall,
-- io_uring, io_uring_enter, unlink...; at the default level also dirtied,
-- disk-read and sampled calls: target_io_waits), rbytes, wbytes (read and
-- written), ops, wait_ns.
CREATE OR REPLACE TEMP TABLE target_io AS
  WITH named AS (
    SELECT c.tid, c.dev, c.ino, c.gen, k.name AS fkind, n.name, n.class,
           CASE WHEN moves_bytes(n.name) THEN c.ret_bytes ELSE 0 END AS bytes, c.ops, c.wait_ns
    FROM target_calls c LEFT JOIN syscall_names n USING (nr) LEFT JOIN kinds k ON k.kind = c.fkind
    UNION ALL
    SELECT tid, dev, ino, gen, fkind, name, class, bytes, count, total_ns FROM syscall_totals WHERE is_target(pid))
  SELECT b.tid, f.path, f.peer, b.fkind, b.dev, b.ino, b.gen, b.name,
         CASE WHEN is_read(class, name) THEN b.bytes ELSE 0 END AS rbytes,
         CASE WHEN is_write(class, name) THEN b.bytes ELSE 0 END AS wbytes,
         b.ops, b.wait_ns
  FROM named b LEFT JOIN file_names f USING (dev, ino, gen)
  UNION ALL
  SELECT tid, path, peer, fkind, dev, ino, gen, 'io_uring',
         CASE WHEN class IN ('read', 'recv') THEN bytes ELSE 0 END, CASE WHEN class IN ('write', 'send') THEN bytes ELSE 0 END,
         1, 0
  FROM uring_io WHERE is_target(pid)
  UNION ALL
  SELECT tid, CASE WHEN reason <> 'network' THEN object END, CASE WHEN reason = 'network' THEN object END,
         CASE WHEN reason = 'network' THEN 'socket' ELSE 'file' END, NULL, NULL, NULL, 'io_uring_enter',
         0, 0, 0, off_ns - runq_ns
  FROM target_offcpu WHERE syscall = 'io_uring_enter' AND object IS NOT NULL
  UNION ALL
  SELECT tid, path, NULL, 'file', NULL, NULL, NULL, syscall, 0, 0, 1, dur
  FROM unlinks WHERE is_target(pid)
;

-- name: sample_weights
-- sample_weights(): each target thread's on-CPU time per CPU sample taken of
-- it (tid, ns): a sample stands for that much of the thread's CPU time.
CREATE OR REPLACE TEMP MACRO sample_weights() AS TABLE
  SELECT s.tid, any_value(c.ns) / count(*) AS ns FROM samples s
    JOIN (SELECT tid, sum(oncpu_ns) AS ns FROM cputime WHERE is_target(pid) GROUP BY tid) c USING (tid)
  WHERE is_target(s.pid) GROUP BY s.tid;

-- name: sample_on_file
-- sample_on_file(user, ino, path): a CPU sample in the kernel, in a call on
-- a file (samples' columns).
CREATE OR REPLACE TEMP MACRO sample_on_file(in_user, ino, path) AS NOT in_user AND (ino <> 0 OR path LIKE '/%');

-- name: target_dispatched_reads
-- Makes target_dispatched_reads, once per explanation (targetIO), read by
-- target_io_inputs, target_io_waits and device_use: disk reads of files the
-- target was reading that a kernel worker issued for it. A throttled read (blkio, io.max) is held by
-- blk-throttle and sent on later by a kworker, and a loop device's worker
-- reads its backing file: the kernel sees the kworker issue them, though
-- they are the target's. Matched by file and time: inserted between the
-- target's first and last wait to read that file. The kworkers' reads (d)
-- come first, and the target's reads are summed only on their files: at
-- --full a command's every read is a row, and summing them all, for files
-- no kworker read, was 0.4-0.5 s of the 1.2 s explaining 9M calls took.
-- Columns: tid (the target's thread with the longest wait to read it),
-- path, dev, fdev, ino, gen, insert_ts, bytes.
CREATE OR REPLACE TEMP TABLE target_dispatched_reads AS
  WITH d AS (
    SELECT path, dev, fdev, ino, gen, insert_ts, bytes FROM disk
    WHERE op = 'read' AND NOT lower AND comm LIKE 'kworker/%' AND NOT is_target(pid))
  SELECT r.tid, d.path, d.dev, d.fdev, d.ino, d.gen, d.insert_ts, d.bytes
  FROM d JOIN (
      SELECT arg_max(tid, dur) AS tid, dev, ino, gen, min(ts) AS b, max(ts + dur) AS e
      FROM syscalls WHERE is_target(pid) AND class = 'read' AND fkind = 'file'
        AND (dev, ino, gen) IN (SELECT fdev, ino, gen FROM d)
      GROUP BY dev, ino, gen) r
    ON r.dev = d.fdev AND r.ino = d.ino AND r.gen = d.gen
  WHERE d.insert_ts BETWEEN r.b AND r.e;

-- name: target_dispatched_reads_empty
-- Makes target_dispatched_reads with no row, for a recording without a disk
-- request. A test keeps the two the same.
CREATE OR REPLACE TEMP TABLE target_dispatched_reads (tid UINTEGER, path VARCHAR, dev UINTEGER, fdev UINTEGER,
  ino UBIGINT, gen UINTEGER, insert_ts UBIGINT, bytes UINTEGER);

-- name: target_io_waits
-- target_io_waits(): target_io's rows at the default level (no syscall
-- hooked: no call returned its bytes), in its columns: what the target
-- dirtied in the page cache (written) and read from disk (read), by file,
-- and the calls the CPU sampler found it in, each sample weighing its
-- thread's CPU time per sample (sample_weights).
CREATE OR REPLACE TEMP MACRO target_io_waits() AS TABLE
  SELECT d.tid, f.path, NULL, 'file', d.dev, d.ino, d.gen, 'dirtied', 0, d.pages * page_size(), 0, 0
  FROM dirtied d LEFT JOIN file_names f USING (dev, ino, gen) WHERE is_target(d.pid)
  UNION ALL
  SELECT tid, path, NULL, 'file', fdev, ino, gen, 'disk-read', bytes, 0, 0, 0
  FROM disk WHERE is_target(pid) AND op = 'read' AND NOT lower AND fkind <> 'blockdev'
  UNION ALL
  SELECT s.tid, coalesce(f.path, CASE WHEN s.path LIKE '/%' THEN s.path END), f.peer, coalesce(f.kind, 'file'),
         s.dev, s.ino, s.gen, n.name, 0, 0, 0, w.ns
  FROM samples s JOIN sample_weights() w USING (tid) JOIN syscall_names n ON n.nr = s.syscall_nr
    LEFT JOIN file_names f USING (dev, ino, gen)
  WHERE is_target(s.pid) AND sample_on_file(s.user, s.ino, s.path);

-- name: target_io_dispatched
-- target_io's rows at the default level for the disk reads kernel workers
-- issued for the target (target_dispatched_reads), in its columns: a
-- statement apart from target_io_waits, a macro, which is made before the
-- table.
SELECT tid, path, NULL, 'file', fdev, ino, gen, 'disk-read', bytes, 0, 0, 0 FROM target_dispatched_reads;
