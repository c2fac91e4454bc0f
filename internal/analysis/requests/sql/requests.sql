-- Requests (requests*.go, `report requests`): a server's calls on its
-- connections, cut into requests in Go; their first bytes; the files a
-- request used; the connections' addresses and the upstreams that answered.

-- name: requests_socket_calls
-- The target's calls on connected sockets (TCP or unix), per connection in
-- time order.
-- Parameters: $pids (UINTEGER[]): the target's processes.
-- Columns: pid, dev, ino, gen (the connection), tid, comm, ts, dur, name,
-- class, ret, blocked, peer, local (the connection's addresses; '' unknown).
SELECT s.pid, s.dev, s.ino, s.gen, s.tid, coalesce(s.comm, ''), s.ts, s.dur, s.name, s.class, s.ret, s.blocked,
  coalesce(f.peer, ''), coalesce(f.local, '')
FROM syscalls s LEFT JOIN file_names f USING (dev, ino, gen)
WHERE s.pid IN (SELECT unnest($pids::UINTEGER[])) AND s.fkind IN ('socket', 'unix')
ORDER BY s.pid, s.dev, s.ino, s.gen, s.ts;

-- name: requests_first_bytes
-- Each read's first bytes (--requests; each request's first read's, in
-- older recordings), by connection and the entry time of the read, and when
-- they reached the socket (TCP; 0 unknown); per connection in time order.
-- Parameters: $pids (UINTEGER[]): the target's processes.
-- Columns: pid, dev, ino, gen, ts, data (BLOB), arrived.
SELECT pid, dev, ino, gen, ts, data, coalesce(arrived, 0) FROM payloads WHERE pid IN (SELECT unnest($pids::UINTEGER[]))
ORDER BY pid, dev, ino, gen, ts;

-- name: requests_files
-- The files a request's threads used while it ran: bytes read and written,
-- operations and time waited, unlinks counted as one operation each.
-- Parameters: $b, $e (UBIGINT): the request; $tids (UINTEGER[]): the
-- threads on its path.
-- Columns: path (or inode:[N]), read, written (bytes), ops, wait (ns).
SELECT coalesce(path, 'inode:[' || ino || ']'), sum(r), sum(w), sum(ops), sum(wait) FROM (
  SELECT path, ino, CASE WHEN class = 'read' THEN bytes ELSE 0 END AS r,
         CASE WHEN class = 'write' THEN bytes ELSE 0 END AS w, count AS ops, total_ns AS wait
  FROM io WHERE tid IN (SELECT unnest($tids::UINTEGER[])) AND fkind = 'file' AND ts < $e AND end_ts > $b
  UNION ALL
  SELECT path, NULL, 0, 0, 1, dur FROM unlinks WHERE tid IN (SELECT unnest($tids::UINTEGER[])) AND ts < $e AND ts + dur > $b)
GROUP BY 1 ORDER BY 5 DESC, 1;

-- name: requests_connection_ends
-- How each connection on which a call was seen is addressed: its local and
-- peer addresses, and (unix) the peer socket's inode.
-- Columns: pid, dev, ino, gen, local, peer ('' unknown), peer_ino (0).
SELECT DISTINCT s.pid, s.dev, s.ino, s.gen, coalesce(f.local, ''), coalesce(f.peer, ''), coalesce(f.peer_ino, 0)
FROM (SELECT DISTINCT pid, dev, ino, gen FROM syscalls WHERE fkind IN ('socket', 'unix')) s
JOIN file_names f USING (dev, ino, gen);

-- name: requests_upstream_wakers
-- The waits of a request's threads that an upstream server's answer ended
-- (waker_side 'server'), with the waker's socket: who answered each hop.
-- Parameters: $tids (UINTEGER[]): the threads.
-- Columns: tid, start_ts, ts, waker_pid, waker_comm, peer_ino, local (of
-- the waker's socket).
SELECT o.tid, o.start_ts, o.ts, o.waker_pid, coalesce(o.waker_comm, ''), coalesce(f.peer_ino, 0), coalesce(f.local, '')
FROM offcpu o LEFT JOIN file_names f ON f.dev = o.waker_dev AND f.ino = o.waker_ino AND f.gen = o.waker_gen
WHERE o.tid IN (SELECT unnest($tids::UINTEGER[])) AND o.waker_pid <> 0 AND o.waker_pid <> o.pid AND o.waker_side = 'server'
ORDER BY o.tid, o.ts;
