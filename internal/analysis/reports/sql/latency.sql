-- Latency (latency.go): statistics, histograms and the slowest calls, per
-- syscall class, and per disk. {{where}} is a Filter's condition on the
-- rows, its values bound (?), built by Go for the table's columns.

-- name: stats_calls
-- The streamed calls' latency per class, on the numeric table.
-- Slots: {{where}} on syscall_raw (rawCols).
-- Columns: class, count, min, avg, max, stddev (ns).
-- A number syscall_names lacks (a damaged or doctored recording) is class
-- 'none', as event.Class names an unknown one.
SELECT coalesce(n.class, 'none') AS class, count(*), min(dur), avg(dur), max(dur), coalesce(stddev_pop(dur), 0)
FROM syscall_raw r LEFT JOIN syscall_names n USING (nr) WHERE {{where}} GROUP BY 1 ORDER BY 1;

-- name: stats_disks
-- Block requests' latency per device: in the queue, at the device.
-- Slots: {{where}} on the disk view (diskCols).
-- Columns: device, requests, queue avg and max, service avg, p99 and max
-- (ns).
SELECT coalesce(device, (dev >> 20) || ':' || (dev & 1048575)), count(*), avg(queue_ns), max(queue_ns),
  avg(service_ns), quantile_disc(service_ns, 0.99), max(service_ns)
FROM disk WHERE {{where}} GROUP BY 1 ORDER BY 2 DESC;

-- name: stream_durs
-- Makes stream_durs: the streamed calls counted per class and duration.
-- Durations repeat (the clock's steps, calls alike), so it is small, and
-- quantiles, ranges and histograms read it instead of sorting or scanning
-- every call again.
-- Slots: {{where}} on syscall_raw (rawCols).
-- Columns: class, dur, c (calls).
CREATE OR REPLACE TEMP TABLE stream_durs AS
  WITH h AS (SELECT nr, dur, count(*) AS c FROM syscall_raw WHERE {{where}} GROUP BY nr, dur)
  SELECT coalesce(n.class, 'none') AS class, h.dur, sum(h.c)::UBIGINT AS c FROM h LEFT JOIN syscall_names n USING (nr) GROUP BY 1, 2;

-- name: stream_quantiles
-- p50, p90 and p99 of each class from stream_durs, as DuckDB's
-- quantile_disc picks them: the value at index max(1, n - floor(n - n*q)) - 1
-- of the sorted durations.
-- Columns: class, p50, p90, p99.
WITH cum AS (
    SELECT class, dur, sum(c) OVER (PARTITION BY class ORDER BY dur ROWS UNBOUNDED PRECEDING) AS upto,
           sum(c) OVER (PARTITION BY class)::DOUBLE AS n
    FROM stream_durs),
  k AS (SELECT *, greatest(1, n - floor(n - n * 0.5)) - 1 AS k50, greatest(1, n - floor(n - n * 0.9)) - 1 AS k90,
               greatest(1, n - floor(n - n * 0.99)) - 1 AS k99 FROM cum)
SELECT class, min(dur) FILTER (WHERE upto > k50), min(dur) FILTER (WHERE upto > k90), min(dur) FILTER (WHERE upto > k99)
FROM k GROUP BY class;

-- name: totals_by_class
-- The kernel's aggregates (the default and syscalls levels) per class.
-- Slots: {{where}} on syscall_totals (totalsWhere).
-- Columns: class, count, total_ns, max_ns.
SELECT class, sum(count), sum(total_ns), max(max_ns) FROM syscall_totals WHERE {{where}} GROUP BY class;

-- name: totals_slots
-- The kernel's log2 histograms of a class.
-- Parameters: ? (first): the class.
-- Slots: {{where}} on syscall_totals (totalsWhere).
-- Columns: slots (UBIGINT[]).
SELECT slots FROM syscall_totals WHERE class = ? AND {{where}};

-- name: stream_ranges
-- Each class's range of streamed durations.
-- Columns: class, min, max.
SELECT class, min(dur), max(dur) FROM stream_durs GROUP BY class ORDER BY class;

-- name: stream_linear
-- A class's streamed calls in linear buckets.
-- Parameters: ? in order: lowest, width, last bucket, class, lowest,
-- highest.
-- Columns: bucket, calls.
SELECT least(((dur - ?) // ?)::BIGINT, ?) AS b, sum(c)::UBIGINT FROM stream_durs
WHERE class = ? AND dur >= ? AND dur <= ? GROUP BY b;

-- name: stream_log2
-- A class's streamed calls in log2(ns) buckets.
-- Parameters: ?: the class.
-- Columns: bucket, calls.
SELECT floor(log2(greatest(dur, 1)))::INTEGER, sum(c)::UBIGINT FROM stream_durs WHERE class = ? GROUP BY 1;

-- name: top_calls
-- The slowest streamed calls per class in one pass, each class keeping its
-- top rows: arg_max with a count, by duration, then the earlier call, then
-- the lower tid, so that equal durations come out the same every time. (A
-- window over every call sorts them all: seconds, with a tie-breaker.)
-- The rows kept are named after (ops).
-- Slots: {{where}} on syscall_raw (rawCols).
-- Parameters: ? (first, before the filter's): how many per class.
-- Columns: ops'.
WITH top AS (
    SELECT unnest(arg_max({'ts': raw.ts, 'dur': raw.dur, 'pid': raw.pid, 'tid': raw.tid, 'comm_id': raw.comm_id, 'nr': raw.nr,
                           'fd': raw.fd, 'ret': raw.ret, 'dev': raw.dev, 'ino': raw.ino, 'gen': raw.gen},
                          {'d': raw.dur, 't': -(raw.ts::BIGINT), 'i': -(raw.tid::BIGINT)}, ?)) AS row
    FROM syscall_raw raw JOIN syscall_names names USING (nr) WHERE {{where}} GROUP BY names.class),
  r AS (SELECT unnest(row) FROM top)
SELECT r.ts, r.ts + r.dur, r.dur, n.class, n.name, r.ret, c.comm, r.pid, r.tid, r.fd,
       coalesce(f.path, f.peer, ''), 0
FROM r LEFT JOIN file_names f USING (dev, ino, gen) LEFT JOIN comms c USING (comm_id)
  LEFT JOIN syscall_names n USING (nr)
ORDER BY n.class, r.dur DESC, r.ts, r.tid;
