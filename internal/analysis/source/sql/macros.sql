-- Macros every analysis may use: the words of our vocabulary in SQL, each
-- written once. Made on each connection an analysis holds, after
-- target_pids (empty until an analysis names its target).

-- name: is_target
-- is_target(pid): pid is one of the target's processes (target_pids, made
-- from the bound list $pids: sql/target.sql).
CREATE OR REPLACE TEMP MACRO is_target(p) AS p IN (SELECT pid FROM target_pids);

-- name: is_signal_wait
-- is_signal_wait(syscall): the call waits for a signal and nothing else.
CREATE OR REPLACE TEMP MACRO is_signal_wait(syscall) AS syscall IN ('rt_sigsuspend', 'pause', 'rt_sigtimedwait');

-- name: is_storage
-- is_storage(reason): a wait on storage (event.Reason.Disk; a test keeps
-- the two the same).
CREATE OR REPLACE TEMP MACRO is_storage(reason) AS reason IN ('disk-read', 'disk-write', 'dirty-throttle', 'sync');

-- name: moves_bytes
-- moves_bytes(name): the syscall's return value is bytes moved (the io
-- view's bytes column): not accept or connect (event.SyscallMovesBytes; a
-- test keeps the two the same).
CREATE OR REPLACE TEMP MACRO moves_bytes(name) AS name IN (
  'copy_file_range', 'fallocate', 'ftruncate', 'pread64', 'preadv', 'preadv2', 'pwrite64', 'pwritev', 'pwritev2',
  'read', 'readv', 'recvfrom', 'recvmsg', 'sendfile', 'sendmsg', 'sendto', 'splice', 'write', 'writev');

-- name: traffic
-- traffic(fkind): the kind of traffic a call's file carries, as usage
-- splits it: file, net, ipc or other (event.FileKind.Traffic; a test keeps
-- the two the same).
CREATE OR REPLACE TEMP MACRO traffic(fkind) AS CASE WHEN fkind IN ('file', 'blockdev') THEN 'file'
  WHEN fkind = 'socket' THEN 'net' WHEN fkind IN ('pipe', 'unix') THEN 'ipc' ELSE 'other' END;

-- name: for_work
-- for_work(syscall, waker_side, reason, unmoved, serves): the wait was for
-- work that had not come, no slowness of the waiter's own. Only a program
-- that serves waits for work: a batch program's every wait is its own.
--   - a poll woken by a server's answer (waker_side 'server') never is: a
--     client waiting on its server, whatever else it polled;
--   - a poll woken by a client's request ('client') is: a server waiting;
--   - accept is: a listener waiting for its next connection;
--   - otherwise only in a process that serves (serves: it accepted or was
--     woken by a client's request, serving_pids in explain's target.sql;
--     true for an outside process the path hopped into, a server or a lock
--     holder): a poll of a thread that moved no socket data (unmoved: the
--     target's threads, socket_movers in target_offcpu; false for an
--     outside process, whose calls were not seen), timed out or woken by a
--     network card; a server's master waiting for a signal (nginx in
--     sigsuspend), unless another process's kill ended it as a lock
--     (PostgreSQL's latches).
-- A batch program's poll that timed out is its own sleep (classify), one
-- ended by an answer over a socket with no side (UDP) is the network.
CREATE OR REPLACE TEMP MACRO for_work(syscall, waker_side, reason, unmoved, serves) AS
  coalesce(CASE WHEN waker_side = 'server' THEN false
                WHEN waker_side = 'client' AND is_poll(syscall) THEN true
                WHEN syscall IN ('accept', 'accept4') THEN true
                ELSE serves AND ((is_poll(syscall) AND unmoved)
                  OR is_signal_wait(syscall) AND reason <> 'lock') END, false);

-- name: dirtier
-- dirtier(): per file (dev, ino, gen), the process that dirtied most of its
-- pages (pid, comm): the one a write-back of the file is charged to, not the
-- flusher thread.
CREATE OR REPLACE TEMP MACRO dirtier() AS TABLE
  SELECT dev, ino, gen, arg_max(pid, pages) AS pid, arg_max(comm, pages) AS comm
  FROM dirtied GROUP BY dev, ino, gen;
