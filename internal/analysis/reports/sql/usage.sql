-- Usage (usage.go, `report usage`): I/O by process, file, block device and
-- network interface under a filter, as iotop, filetop and iostat split it.
-- A filter's conditions fill the {{where}} slots, their values bound (?).

-- name: usage_io
-- Makes usage_io: the io view's rows under the filter, summed per process,
-- thread, file, fd and syscall. Streamed calls are summed on the numeric
-- table first and named after: a few rows instead of millions.
-- Slots: {{where}} on syscall_raw (rawCols), then {{where}} on
-- syscall_totals (totalsIOCols).
-- Columns: pid, ts (the latest), comm, name, class, fd (NULL for the
-- kernel's aggregates), dev, ino, gen, fkind, bytes, path.
CREATE OR REPLACE TEMP TABLE usage_io AS
  WITH c AS (
    SELECT pid, tid, comm_id, dev, ino, gen, fkind, fd, nr, max(ts) AS ts,
           sum(CASE WHEN ret > 0 THEN ret ELSE 0 END) AS ret_bytes
    FROM syscall_raw WHERE {{where}} GROUP BY ALL),
  named AS (
    SELECT c.pid, c.ts, cm.comm, n.name, n.class, c.fd, c.dev, c.ino, c.gen, k.name AS fkind,
           CASE WHEN moves_bytes(n.name) THEN c.ret_bytes ELSE 0 END AS bytes
    FROM c LEFT JOIN comms cm USING (comm_id) LEFT JOIN syscall_names n USING (nr) LEFT JOIN kinds k ON k.kind = c.fkind
    UNION ALL
    SELECT pid, ts, comm, name, class, NULL, dev, ino, gen, fkind, bytes FROM syscall_totals WHERE {{where}})
  SELECT io.*, f.path FROM named io LEFT JOIN file_names f USING (dev, ino, gen);

-- name: usage_processes
-- Each process's bytes read and written, split by traffic (file, net, ipc,
-- other), from usage_io.
-- Parameters: $limit: the most rows.
-- Columns: pid, comm, then read file, net, ipc, other, and written file,
-- net, ipc, other (bytes).
SELECT pid, arg_max(comm, ts),
  sum(CASE WHEN is_read(class, name) AND traffic(fkind) = 'file' THEN bytes ELSE 0 END),
  sum(CASE WHEN is_read(class, name) AND traffic(fkind) = 'net' THEN bytes ELSE 0 END),
  sum(CASE WHEN is_read(class, name) AND traffic(fkind) = 'ipc' THEN bytes ELSE 0 END),
  sum(CASE WHEN is_read(class, name) AND traffic(fkind) = 'other' THEN bytes ELSE 0 END),
  sum(CASE WHEN is_write(class, name) AND traffic(fkind) = 'file' THEN bytes ELSE 0 END),
  sum(CASE WHEN is_write(class, name) AND traffic(fkind) = 'net' THEN bytes ELSE 0 END),
  sum(CASE WHEN is_write(class, name) AND traffic(fkind) = 'ipc' THEN bytes ELSE 0 END),
  sum(CASE WHEN is_write(class, name) AND traffic(fkind) = 'other' THEN bytes ELSE 0 END)
FROM usage_io GROUP BY pid ORDER BY sum(bytes) DESC, pid LIMIT $limit;

-- name: usage_files
-- Each file's bytes read and written, from usage_io, with who used it:
-- grouped by user first and named after, since building the "fd 14 in
-- apache2 (31591)" string per row would cost more than the query.
-- Parameters: $limit: the most rows.
-- Columns: path, read, written (bytes), users (VARCHAR[]).
WITH g AS (
  SELECT path, fd, comm, pid, sum(CASE WHEN is_read(class, name) THEN bytes ELSE 0 END) AS r,
         sum(CASE WHEN is_write(class, name) THEN bytes ELSE 0 END) AS w, sum(bytes) AS b
  FROM usage_io WHERE fkind = 'file' AND path IS NOT NULL GROUP BY path, fd, comm, pid)
SELECT path, sum(r), sum(w), list(DISTINCT user ORDER BY user)
FROM (SELECT *, CASE WHEN fd IS NOT NULL THEN 'fd ' || fd || ' in ' || comm || ' (' || pid || ')'
                     ELSE comm || ' (' || pid || ')' END AS user FROM g)
GROUP BY path HAVING sum(b) > 0 ORDER BY sum(b) DESC, path LIMIT $limit;

-- name: usage_block
-- Block I/O by process: what each issued, and the writes charged to it
-- (the process that dirtied the data, not the flusher that issued them).
-- Slots: {{where}} on the disk view (diskCols).
-- Parameters: after the slot's values, one more ?: the most rows (the
-- slot's are positional, and DuckDB binds one kind or the other).
-- Columns: pid, comm, read, write issued, write charged (bytes).
WITH b AS (SELECT * FROM disk WHERE {{where}}),
issued AS (SELECT pid, arg_max(comm, ts) AS comm, sum(CASE WHEN op = 'read' THEN bytes ELSE 0 END) AS r,
                  sum(CASE WHEN op = 'write' THEN bytes ELSE 0 END) AS w FROM b GROUP BY pid),
charged AS (SELECT coalesce(d.pid, b.pid) AS pid, arg_max(coalesce(d.comm, b.comm), b.ts) AS comm, sum(b.bytes) AS c
            FROM b LEFT JOIN dirtier() d ON d.dev = b.fdev AND d.ino = b.ino AND d.gen = b.gen
            WHERE b.op = 'write' GROUP BY 1)
SELECT coalesce(i.pid, c.pid), coalesce(i.comm, c.comm), coalesce(i.r, 0), coalesce(i.w, 0), coalesce(c.c, 0)
FROM issued i FULL OUTER JOIN charged c ON i.pid = c.pid
ORDER BY coalesce(i.r, 0) + greatest(coalesce(i.w, 0), coalesce(c.c, 0)) DESC LIMIT ?;

-- name: usage_network
-- Socket bytes by network interface, from usage_io: a socket's local
-- address names the interface that holds it (interfaces), else the address.
-- Columns: interface (NULL: unknown), received, sent (bytes).
SELECT coalesce(n.ifname, split_part(io.local, ':', 1)), sum(CASE WHEN is_read(class, name) THEN bytes ELSE 0 END),
  sum(CASE WHEN is_write(class, name) THEN bytes ELSE 0 END)
FROM (SELECT io.*, f.local AS local FROM usage_io io LEFT JOIN file_names f USING (dev, ino, gen) WHERE fkind = 'socket') io
LEFT JOIN (SELECT name AS ifname, addr FROM interfaces) n ON n.addr = regexp_replace(io.local, ':[0-9]+$', '')
GROUP BY 1 ORDER BY 2 DESC, 3 DESC, 1;

-- name: usage_accounting
-- The kernel's own I/O accounting per process (task_io, as
-- /proc/PID/io): each thread's last reading (at its exit, or the end) less
-- its first (at the start; 0 for a thread born during the recording, whose
-- accounting began at 0), summed over the process's threads.
-- Slots: {{where}} on task_io (accountingCols).
-- Parameters: after the slot's values, one more ?: the most rows.
-- Columns: pid, comm (the main thread's), rchar, wchar, syscr, syscw,
-- read_bytes, write_bytes less cancelled_write_bytes.
WITH t AS (
  SELECT pid, tid, arg_max(comm, ts) AS comm,
    greatest(arg_max(rchar, ts)::HUGEINT - coalesce(min(rchar) FILTER (WHERE phase = 'start'), 0), 0) AS rchar,
    greatest(arg_max(wchar, ts)::HUGEINT - coalesce(min(wchar) FILTER (WHERE phase = 'start'), 0), 0) AS wchar,
    greatest(arg_max(syscr, ts)::HUGEINT - coalesce(min(syscr) FILTER (WHERE phase = 'start'), 0), 0) AS syscr,
    greatest(arg_max(syscw, ts)::HUGEINT - coalesce(min(syscw) FILTER (WHERE phase = 'start'), 0), 0) AS syscw,
    greatest(arg_max(read_bytes, ts)::HUGEINT - coalesce(min(read_bytes) FILTER (WHERE phase = 'start'), 0), 0) AS read_bytes,
    greatest(arg_max(write_bytes, ts)::HUGEINT - coalesce(min(write_bytes) FILTER (WHERE phase = 'start'), 0), 0) AS write_bytes,
    greatest(arg_max(cancelled_write_bytes, ts)::HUGEINT
             - coalesce(min(cancelled_write_bytes) FILTER (WHERE phase = 'start'), 0), 0) AS cancelled_write_bytes
  FROM task_io WHERE {{where}} GROUP BY pid, tid)
SELECT pid, coalesce(any_value(comm) FILTER (WHERE tid = pid), any_value(comm)), sum(rchar), sum(wchar), sum(syscr), sum(syscw),
  sum(read_bytes), greatest(sum(write_bytes) - sum(cancelled_write_bytes), 0)
FROM t GROUP BY pid HAVING sum(rchar) + sum(wchar) + sum(read_bytes) + sum(write_bytes) > 0
ORDER BY sum(rchar) + sum(wchar) DESC, pid LIMIT ?;

-- name: usage_storage_files
-- What the kernel saw of each file at every level: pages dirtied by writes
-- (dirtied), and bytes read from storage for it (block requests, not those
-- of a device another is stacked on).
-- Slots: {{where}} on dirtied d joined to file_names f, then {{where}} on
-- the disk view (its insert_ts to ts).
-- Columns: path (or inode:[N]), dirtied, from_storage (bytes), users
-- (VARCHAR[]: "comm (pid)").
WITH d AS (
  SELECT coalesce(f.path, 'inode:[' || d.ino || ']') AS path, sum(d.pages) * page_size() AS dirtied, 0 AS from_storage,
         list(DISTINCT d.comm || ' (' || d.pid || ')') AS users
  FROM dirtied d LEFT JOIN file_names f USING (dev, ino, gen) WHERE {{where}} GROUP BY 1),
r AS (
  SELECT path, 0 AS dirtied, sum(bytes) AS from_storage, list(DISTINCT comm || ' (' || pid || ')') AS users
  FROM disk WHERE op = 'read' AND NOT lower AND fkind = 'file' AND path IS NOT NULL AND {{where}} GROUP BY path)
SELECT path, sum(dirtied), sum(from_storage), flatten(list(users)) FROM (SELECT * FROM d UNION ALL SELECT * FROM r)
GROUP BY path;
