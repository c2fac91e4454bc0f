-- Series (series.go, `report series`): the recording's activity over time,
-- spread over buckets in Go.

-- name: series_block
-- Block requests that moved data, each from its issue (its completion when
-- it was never issued) to its completion, by device.
-- Columns: device (its name, or "dev MAJ:MIN"), op ('read' or 'write'),
-- issue_ts, ts, bytes.
SELECT coalesce(d.name, 'dev ' || (b.dev >> 20) || ':' || (b.dev & 1048575)), b.op, b.issue_ts, b.ts, b.bytes
FROM block b LEFT JOIN devices d USING (dev) WHERE b.op IN ('read', 'write') AND b.bytes > 0 ORDER BY 1;

-- name: series_dirtied
-- Pages dirtied, each row over its span.
-- Columns: from, to (ns), pages.
SELECT ts, last_ts, pages FROM dirtied;

-- name: series_written_back
-- Pages written back, each write-back over its duration.
-- Columns: from, to (ns), pages.
SELECT ts - least(dur, ts), ts, pages FROM writeback;

-- name: series_in_flight
-- Every block request from its insert (its issue, else its completion, when
-- no insert was seen) to its completion, by device, in insert order: the
-- spans that make each device's %util over time.
-- Columns: device (its name, or "dev MAJ:MIN"), insert_ts, ts.
SELECT coalesce(d.name, 'dev ' || (b.dev >> 20) || ':' || (b.dev & 1048575)),
  CASE WHEN b.insert_ts BETWEEN 1 AND b.ts THEN b.insert_ts ELSE b.ts END AS s, b.ts
FROM block_raw b LEFT JOIN devices d USING (dev) ORDER BY 1, 2;
