-- Log (log_stream.go, `report log`): every streamed call under a filter,
-- in time order, at pipe speed: read slice by slice from the numeric
-- table, names joined in Go.

-- name: log_range
-- The selected calls' time range and count, to cut it into slices.
-- Slots: {{where}} on syscall_raw (rawCols).
-- Columns: first ts, last ts, calls.
SELECT min(ts)::BIGINT, max(ts)::BIGINT, count(*) FROM syscall_raw WHERE {{where}};

-- name: log_slice
-- The selected calls begun in one slice of time, sorted: each slice is
-- sorted on its own, so the first rows go out once the first slice is
-- (not the whole recording: 2.3 s for 27M), and DuckDB's zone maps skip
-- the row groups outside it.
-- Slots: {{where}} on syscall_raw (rawCols).
-- Parameters: after the slot's values, three more ?: the slice's first
-- ts, its end, and whether it is the last (which takes its end too).
-- Columns: ts, dur, nr, ret, pid, tid, comm_id, fd, dev, ino, gen.
SELECT ts, dur, nr, ret, pid, tid, comm_id, fd, dev, ino, gen FROM syscall_raw
WHERE {{where}} AND ts >= ? AND (ts < ? OR ?) ORDER BY ts, tid;
