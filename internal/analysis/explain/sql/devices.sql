-- The block devices during the target's window, as iostat -x reads them,
-- and how busy they were while the target waited on storage. Built in the
-- order below on the connection the explanation holds.

-- name: device_requests
-- Makes device_requests: every block request in flight during the window,
-- each with its device's name, whether it was the target's (issued by it,
-- or by a kworker for it: target_dispatched_reads; or of data it dirtied)
-- and whether it carried a device stacked on this one (a loop device's
-- file, a dm member). A request never issued (an empty flush served by one
-- in flight) has issue time 0 in recordings made before the kernel side
-- gave it its insert time: it waited at the device; one with no insert
-- time (or a later one) is taken as inserted at completion. block_raw, not the disk
-- view: the view's joins of every file's latest name and the comms cost
-- most of the time; ops are compared as codes (block_op).
-- Parameters: $b, $e (UBIGINT): the window.
-- Columns: dev, device (NULL when /sys did not name it), op, bytes,
-- insert_ts, issued, ts, done_in (completed in the window: iostat's count),
-- lower, target.
CREATE OR REPLACE TEMP TABLE device_requests AS
SELECT b.dev, d.name AS device, b.op, b.bytes,
  CASE WHEN b.insert_ts BETWEEN 1 AND b.ts THEN b.insert_ts ELSE b.ts END AS insert_ts,
  coalesce(nullif(b.issue_ts, 0), b.insert_ts) AS issued, b.ts,
  b.ts BETWEEN $b AND $e AS done_in,
  coalesce(d.lower, false) OR (b.fdev, b.ino) IN (SELECT backing_dev, backing_ino FROM devices WHERE backing_ino > 0) AS lower,
  is_target(b.pid) OR (b.fdev, b.ino, b.gen) IN (SELECT dev, ino, gen FROM dirtied WHERE is_target(pid))
    OR (b.dev, b.insert_ts, b.fdev, b.ino) IN (SELECT dev, insert_ts, fdev, ino FROM target_dispatched_reads) AS target
FROM block_raw b LEFT JOIN devices d USING (dev)
WHERE b.ts >= $b AND b.insert_ts <= $e;

-- name: device_islands
-- Makes device_islands: the spans of the window when a device had at least
-- one request in flight (inserted, not completed), of every issuer
-- (of_target false) and of the target's requests alone (true): the busy
-- time of iostat's %util (/proc/diskstats io_ticks).
-- Parameters: $b, $e (UBIGINT): the window.
-- Columns: dev, of_target, s, e (ns).
CREATE OR REPLACE TEMP TABLE device_islands AS
WITH spans AS (
    SELECT dev, false AS of_target, greatest(insert_ts, $b) AS s, least(ts, $e) AS t FROM device_requests
    UNION ALL
    SELECT dev, true, greatest(insert_ts, $b), least(ts, $e) FROM device_requests WHERE target),
  o AS (SELECT *, max(t) OVER (PARTITION BY dev, of_target ORDER BY s, t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev FROM spans),
  k AS (SELECT *, sum(CASE WHEN prev IS NULL OR s > prev THEN 1 ELSE 0 END)
          OVER (PARTITION BY dev, of_target ORDER BY s, t ROWS UNBOUNDED PRECEDING) AS island FROM o)
SELECT dev, of_target, min(s) AS s, max(t) AS e FROM k GROUP BY dev, of_target, island;

-- name: device_use
-- Block I/O completed in the window by device, all issuers, with the
-- target's own part, and where requests waited: in the queue (inserted,
-- not yet issued) and at the device (issued to complete).
-- Columns: name, dev, read, written, discarded, zeroed (bytes), requests,
-- await_ms, queue_ms, service_ms, stacked (bytes carrying a device stacked
-- on it), target_bytes.
SELECT coalesce(device, 'dev ' || (dev >> 20) || ':' || (dev & 1048575)), dev,
  sum(CASE WHEN op = block_op('read') THEN bytes ELSE 0 END), sum(CASE WHEN op = block_op('write') THEN bytes ELSE 0 END),
  sum(CASE WHEN op = block_op('discard') THEN bytes ELSE 0 END), sum(CASE WHEN op = block_op('write-zeroes') THEN bytes ELSE 0 END),
  count(*), avg(ts - insert_ts) / 1e6, avg(issued - insert_ts) / 1e6, avg(ts - issued) / 1e6,
  sum(CASE WHEN lower THEN bytes ELSE 0 END),
  sum(CASE WHEN target THEN bytes ELSE 0 END)
FROM device_requests WHERE done_in
GROUP BY 1, 2 ORDER BY sum(bytes) DESC, 1;

-- name: device_load
-- A device's iostat -x columns over the window, as /proc/diskstats counts
-- them: the requests completed in it; await from insert to completion;
-- the queue (aqu-sz) the sum of their times over the window's length (the
-- kernel's time_in_queue); busy the time with a request in flight
-- (io_ticks). Writes are writes and write-zeroes, as the kernel groups them.
-- Parameters: $dev (UINTEGER): the device; $target (BOOLEAN): the target's
-- requests only.
-- Columns: reads, writes, read_bytes, write_bytes, r_await_ms, w_await_ms,
-- queued_ns, busy_ns.
SELECT count(*) FILTER (WHERE op = block_op('read')),
  count(*) FILTER (WHERE op IN (block_op('write'), block_op('write-zeroes'))),
  coalesce(sum(bytes) FILTER (WHERE op = block_op('read')), 0),
  coalesce(sum(bytes) FILTER (WHERE op IN (block_op('write'), block_op('write-zeroes'))), 0),
  coalesce(avg(ts - insert_ts) FILTER (WHERE op = block_op('read')) / 1e6, 0),
  coalesce(avg(ts - insert_ts) FILTER (WHERE op IN (block_op('write'), block_op('write-zeroes'))) / 1e6, 0),
  coalesce(sum(ts - insert_ts), 0),
  (SELECT coalesce(sum(e - s), 0) FROM device_islands WHERE dev = $dev AND of_target = $target)
FROM device_requests WHERE dev = $dev AND done_in AND (target OR NOT $target);

-- name: device_during_waits
-- How a device did while the target waited on storage (its waits in
-- target_offcpu, overlapping ones counted once, each to its wake-up): the
-- waits' time, the part of it with a request of any issuer in flight, the
-- bytes read and written that completed in it, and the requests' time in
-- flight within it (its queue).
-- Parameters: $b, $e (UBIGINT): the window; $dev (UINTEGER): the device.
-- Columns: wait_ns, busy_ns, read_bytes, write_bytes, queued_ns.
WITH w AS (
    SELECT greatest(start_ts, $b) AS s, least(ts - runq_ns, $e) AS t FROM target_offcpu
    WHERE is_storage(reason) AND ts - runq_ns > start_ts),
  o AS (SELECT *, max(t) OVER (ORDER BY s, t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev FROM w WHERE t > s),
  k AS (SELECT *, sum(CASE WHEN prev IS NULL OR s > prev THEN 1 ELSE 0 END) OVER (ORDER BY s, t ROWS UNBOUNDED PRECEDING) AS island FROM o),
  waits AS (SELECT min(s) AS s, max(t) AS e FROM k GROUP BY island)
SELECT (SELECT coalesce(sum(e - s), 0) FROM waits),
  (SELECT coalesce(sum(least(i.e, w.e) - greatest(i.s, w.s)), 0) FROM waits w
     JOIN device_islands i ON i.dev = $dev AND NOT i.of_target AND i.s < w.e AND i.e > w.s),
  (SELECT coalesce(sum(r.bytes) FILTER (WHERE r.op = block_op('read')), 0) FROM device_requests r JOIN waits w ON r.ts > w.s AND r.ts <= w.e WHERE r.dev = $dev),
  (SELECT coalesce(sum(r.bytes) FILTER (WHERE r.op IN (block_op('write'), block_op('write-zeroes'))), 0)
     FROM device_requests r JOIN waits w ON r.ts > w.s AND r.ts <= w.e WHERE r.dev = $dev),
  (SELECT coalesce(sum(least(r.ts, w.e) - greatest(r.insert_ts, w.s)), 0) FROM device_requests r
     JOIN waits w ON r.insert_ts < w.e AND r.ts > w.s WHERE r.dev = $dev);

-- name: device_throttled
-- The time the target's storage waits on a device spent held by its blkio
-- throttle: waited, with none of its requests at the device (no tracepoint
-- fires when a bio enters the throttle).
-- Parameters: $b, $e (UBIGINT): the window; $dev (UINTEGER): the device.
-- Columns: one, ns.
WITH waits AS (
    SELECT o.start_ts AS b, o.ts - o.runq_ns AS e FROM offcpu o
    WHERE is_target(o.pid) AND is_storage(o.reason) AND o.ts > $b AND o.start_ts < $e),
  busy AS (
    SELECT w.b, w.e, sum(greatest(least(r.ts, w.e) - greatest(r.insert_ts, w.b), 0)) AS at_device
    FROM waits w LEFT JOIN disk r ON r.dev = $dev AND r.insert_ts < w.e AND r.ts > w.b
    GROUP BY w.b, w.e)
SELECT sum(greatest((e - b) - coalesce(at_device, 0), 0)) FROM busy;
