// Package store keeps a recording in one DuckDB file: raw tables as the kernel
// reported them, and views that analyses and users query (docs/trace-format.md).
package store

// SchemaVersion changes whenever a table or view changes shape.
const SchemaVersion = 1

// Times (ts, *_ts) are CLOCK_MONOTONIC nanoseconds; meta.clock_offset_ns maps them to wall time.
var tables = []struct{ name, columns string }{
	{"meta", "key VARCHAR PRIMARY KEY, value VARCHAR"},
	{"files", "ts UBIGINT, dev UINTEGER, ino UBIGINT, gen UINTEGER, kind VARCHAR, path VARCHAR, deleted BOOLEAN, truncated BOOLEAN, size UBIGINT, local VARCHAR, peer VARCHAR"},
	{"syscalls", "ts UBIGINT, dur UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, name VARCHAR, class VARCHAR, fd INTEGER, ret BIGINT, req UBIGINT, blocked BOOLEAN, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind VARCHAR, fd2 INTEGER, dev2 UINTEGER, ino2 UBIGINT, gen2 UINTEGER, flags UINTEGER"},
	{"syscall_totals", "ts UBIGINT, last_ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, name VARCHAR, class VARCHAR, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind VARCHAR, count UBIGINT, bytes UBIGINT, total_ns UBIGINT, max_ns UBIGINT, errors UBIGINT, slots UBIGINT[]"},
	{"offcpu", "ts UBIGINT, start_ts UBIGINT, off_ns UBIGINT, runq_ns UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, state VARCHAR, reason VARCHAR, stack_id INTEGER, syscall VARCHAR, waker_pid UINTEGER, waker_tid UINTEGER, waker_comm VARCHAR"},
	{"stacks", "stack_id INTEGER, frames VARCHAR[]"},
	{"block", "ts UBIGINT, insert_ts UBIGINT, issue_ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, dev UINTEGER, sector UBIGINT, bytes UINTEGER, op VARCHAR, sync BOOLEAN, meta BOOLEAN, fua BOOLEAN, error INTEGER, fdev UINTEGER, ino UBIGINT, gen UINTEGER"},
	{"throttle", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, pause_ns UBIGINT, period_ns UBIGINT, dirtied UBIGINT, bdi_dev UINTEGER"},
	{"writeback", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, dev UINTEGER, ino UBIGINT, gen UINTEGER, pages UBIGINT, dur UBIGINT"},
	{"dirtied", "ts UBIGINT, last_ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, dev UINTEGER, ino UBIGINT, gen UINTEGER, pages UBIGINT"},
	{"cputime", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, oncpu_ns UBIGINT"},
	{"forks", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, child_pid UINTEGER, child_tid UINTEGER"},
	{"execs", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, ppid UINTEGER, filename VARCHAR, args VARCHAR[], cgroup VARCHAR"},
	{"exits", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, code INTEGER, group_dead BOOLEAN"},
	{"uring", "ts UBIGINT, dur UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, opcode UINTEGER, res BIGINT, user_data UBIGINT, fd INTEGER, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind VARCHAR"},
	{"unlink_raw", "ts UBIGINT, dur UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, name VARCHAR, ret BIGINT, ddev UINTEGER, dino UBIGINT, dgen UINTEGER, target VARCHAR"},
	{"lost", "source VARCHAR, count UBIGINT"},
	{"devices", "dev UINTEGER, name VARCHAR"},
	{"interfaces", "name VARCHAR, addr VARCHAR"},
}

// views are what analyses and `whyslow sql` read. Each joins a file's identity
// (dev, ino, gen) to its latest description.
var views = []string{
	`CREATE OR REPLACE VIEW file_names AS
	 SELECT dev, ino, gen, arg_max(path, ts) AS path, arg_max(kind, ts) AS kind, bool_or(deleted) AS deleted,
	        arg_max(peer, ts) AS peer, arg_max(local, ts) AS local
	 FROM files GROUP BY dev, ino, gen`,
	// io: every I/O syscall, streamed or aggregated, one row each (count > 1 for aggregates).
	`CREATE OR REPLACE VIEW io AS
	 SELECT s.ts, s.ts + s.dur AS end_ts, s.dur, s.pid, s.tid, s.comm, s.name, s.class, s.fd, s.ret,
	        CASE WHEN s.ret > 0 AND s.class IN ('read','write','net','xfer') THEN s.ret ELSE 0 END AS bytes, 1::UBIGINT AS count, s.dur AS total_ns,
	        s.dev, s.ino, s.gen, s.fkind, f.path, f.peer, true AS exact
	 FROM syscalls s LEFT JOIN file_names f USING (dev, ino, gen)
	 UNION ALL
	 SELECT t.ts, t.last_ts, t.max_ns, t.pid, t.tid, t.comm, t.name, t.class, NULL, NULL,
	        t.bytes, t.count, t.total_ns, t.dev, t.ino, t.gen, t.fkind, f.path, f.peer, false
	 FROM syscall_totals t LEFT JOIN file_names f USING (dev, ino, gen)`,
	// unlinks: removed names made absolute with the directory the kernel resolved.
	`CREATE OR REPLACE VIEW unlinks AS
	 SELECT u.ts, u.dur, u.pid, u.tid, u.comm, u.name AS syscall, u.ret,
	        CASE WHEN u.target LIKE '/%' THEN u.target
	             WHEN f.path IS NULL THEN u.target
	             WHEN f.path = '/' THEN '/' || u.target
	             ELSE f.path || '/' || u.target END AS path
	 FROM unlink_raw u LEFT JOIN file_names f ON f.dev = u.ddev AND f.ino = u.dino AND f.gen = u.dgen`,
	`CREATE OR REPLACE VIEW disk AS
	 SELECT b.*, d.name AS device, f.path, (b.ts - b.issue_ts) AS service_ns,
	        (b.issue_ts - b.insert_ts) AS queue_ns, (b.ts - b.insert_ts) AS total_ns
	 FROM block b LEFT JOIN devices d USING (dev) LEFT JOIN file_names f ON f.dev = b.fdev AND f.ino = b.ino AND f.gen = b.gen`,
	`CREATE OR REPLACE VIEW threads AS
	 SELECT tid, arg_max(pid, ts) AS pid, arg_max(comm, ts) AS comm FROM (
	   SELECT pid, tid, comm, ts FROM syscalls UNION ALL SELECT pid, tid, comm, ts FROM offcpu
	   UNION ALL SELECT pid, tid, comm, ts FROM execs UNION ALL SELECT pid, tid, comm, ts FROM cputime)
	 WHERE comm IS NOT NULL AND comm <> '' GROUP BY tid`,
	`CREATE OR REPLACE VIEW processes AS
	 SELECT pid, arg_max(comm, ts) AS comm, min(ts) AS first_ts FROM (
	   SELECT pid, comm, ts FROM syscalls UNION ALL SELECT pid, comm, ts FROM offcpu
	   UNION ALL SELECT pid, comm, ts FROM execs UNION ALL SELECT pid, comm, ts FROM cputime
	   UNION ALL SELECT pid, comm, ts FROM syscall_totals) GROUP BY pid`,
}
