// Package store keeps a recording in one DuckDB file: raw tables as the kernel
// reported them, and views that analyses and users query (docs/trace-format.md).
package store

import (
	"slices"

	"github.com/whyslow/whyslow/internal/event"
)

// SchemaVersion changes whenever a table or view changes shape; each
// version's additions are listed in docs/trace-format.md ("Versions").
// A recording of another version (but readsToo, read as one of this
// version: versions.go) is refused with one line naming it.
const SchemaVersion = 8

// Times (ts, *_ts) are CLOCK_MONOTONIC nanoseconds; meta.clock_offset_ns maps them to wall time.
var tables = []struct{ name, columns string }{
	{"meta", "key VARCHAR PRIMARY KEY, value VARCHAR"},
	{"files_raw", "ts UBIGINT, dev UINTEGER, ino UBIGINT, gen UINTEGER, kind UTINYINT, path VARCHAR, deleted BOOLEAN, truncated BOOLEAN, size UBIGINT, local VARCHAR, peer VARCHAR, peer_ino UBIGINT"},
	// High-rate tables hold numbers only: strings cost the appender a C
	// allocation each. Names live in the dimension tables below and come back
	// through views of the same shape (syscalls, offcpu, block).
	//
	// syscall_packed holds syscall_raw's rows as one STRUCT column, which the
	// syscall_raw view unpacks: DuckDB keeps a HyperLogLog of distinct values
	// for every column of a plain type, hashing a sample of each appended
	// chunk into it, and none for a STRUCT. At --full that was a sixth of the
	// recorder's cost a call (BENCHMARKS.md, 1d). A query reads the fields
	// it names, filters on them with their min/max as it would on columns.
	// The second file of sendfile, splice and copy_file_range is a row of
	// syscall_second_file, which the view joins: four columns every call
	// paid for, that three syscalls fill.
	{"syscall_packed", "c STRUCT(" + syscallPackedFields + ")"},
	{"syscall_second_file", "ts UBIGINT, tid UINTEGER, fd2 INTEGER, dev2 UINTEGER, ino2 UBIGINT, gen2 UINTEGER"},
	{"comms", "comm_id UINTEGER, comm VARCHAR"},
	{"syscall_names", "nr USMALLINT, name VARCHAR, class VARCHAR"},
	{"kinds", "kind UTINYINT, name VARCHAR"},
	{"syscall_totals_raw", "ts UBIGINT, last_ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, name VARCHAR, class VARCHAR, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind UTINYINT, count UBIGINT, bytes UBIGINT, total_ns UBIGINT, max_ns UBIGINT, errors UBIGINT, slots UBIGINT[]"},
	// offcpu_raw holds the facts a wait's reason is derived from (state,
	// stack, syscall, the kinds of its file and of the waker's, the waker's
	// syscall), not the reason: wait_reasons derives it (reasons.go). A row
	// is one wait, or a run of short waits alike (waits > 1: off_ns and
	// runq_ns their sums, max_ns the longest, run_start the first's start;
	// start_ts is ts - off_ns, as if they were one wait).
	{"offcpu_raw", "ts UBIGINT, start_ts UBIGINT, off_ns UBIGINT, runq_ns UBIGINT, pid UINTEGER, tid UINTEGER, comm_id UINTEGER, state UTINYINT, stack_id INTEGER, syscall_nr SMALLINT, waker_pid UINTEGER, waker_tid UINTEGER, waker_comm_id UINTEGER, outside BOOLEAN, waker_side UTINYINT, waker_dev UINTEGER, waker_ino UBIGINT, waker_gen UINTEGER, fkind UTINYINT, waker_fkind UTINYINT, waker_nr SMALLINT, waits UINTEGER, run_start UBIGINT, max_ns UBIGINT, quota BOOLEAN"},
	{"stacks", "stack_id INTEGER, frames VARCHAR[]"},
	{"block_raw", "ts UBIGINT, insert_ts UBIGINT, issue_ts UBIGINT, pid UINTEGER, tid UINTEGER, comm_id UINTEGER, dev UINTEGER, sector UBIGINT, bytes UINTEGER, op UTINYINT, sync BOOLEAN, meta BOOLEAN, fua BOOLEAN, error INTEGER, fdev UINTEGER, ino UBIGINT, gen UINTEGER"},
	{"throttle", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, pause_ns UBIGINT, period_ns UBIGINT, dirtied UBIGINT, bdi_dev UINTEGER"},
	{"writeback", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, dev UINTEGER, ino UBIGINT, gen UINTEGER, pages UBIGINT, dur UBIGINT"},
	{"dirtied", "ts UBIGINT, last_ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, dev UINTEGER, ino UBIGINT, gen UINTEGER, pages UBIGINT"},
	{"cputime", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, oncpu_ns UBIGINT"},
	{"forks", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, child_pid UINTEGER, child_tid UINTEGER"},
	// service: the OpenTelemetry service name the process gave itself in its
	// environment (OTEL_SERVICE_NAME, or service.name in
	// OTEL_RESOURCE_ATTRIBUTES), read from /proc when it was seen; "" none.
	{"execs", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, ppid UINTEGER, filename VARCHAR, args VARCHAR[], cgroup VARCHAR, service VARCHAR"},
	{"exits", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, code INTEGER, group_dead BOOLEAN"},
	// tcp_bytes: a TCP connection's totals as it closed, by its socket.
	{"tcp_bytes", "ts UBIGINT, dev UINTEGER, ino UBIGINT, gen UINTEGER, received UBIGINT, sent UBIGINT"},
	// task_io: a thread's own I/O accounting (the kernel's, /proc/PID/task/TID/io):
	// phase 'start' (there when capture began), 'exit' (its last), 'end' (there when it ended).
	{"task_io", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, phase VARCHAR, rchar UBIGINT, wchar UBIGINT, syscr UBIGINT, syscw UBIGINT, read_bytes UBIGINT, write_bytes UBIGINT, cancelled_write_bytes UBIGINT"},
	// payloads: a request's first bytes (--requests), keyed by its socket.
	// arrived: when those bytes reached the socket (TCP), 0 when unknown.
	{"payloads", "ts UBIGINT, pid UINTEGER, tid UINTEGER, dev UINTEGER, ino UBIGINT, gen UINTEGER, data BLOB, arrived UBIGINT"},
	// samples: target threads on CPU at a timer interrupt (default level's
	// split of kernel time): the syscall they were in, its file or path.
	{"samples", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm_id UINTEGER, user BOOLEAN, syscall_nr SMALLINT, fd INTEGER, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind UTINYINT, path VARCHAR, stack_id INTEGER"},
	// proc_samples_raw: the sampled capture's looks at the target's threads
	// in /proc, where BPF could not load (meta capture 'sampled'): the facts
	// classify.SampleReason names, not the reason. A tick's looks share its
	// ts; on_path marks the one its wall time is charged to.
	{"proc_samples_raw", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm_id UINTEGER, state UTINYINT, syscall_nr SMALLINT, fd INTEGER, fkind UTINYINT, object VARCHAR, wchan VARCHAR, stack_id INTEGER, ran_ns UBIGINT, run_delay_ns UBIGINT, interval_ns UBIGINT, was_runnable BOOLEAN, throttled BOOLEAN, sockets BOOLEAN, on_path BOOLEAN, timeout_at UBIGINT, reclaim BOOLEAN"},
	// existing: threads there when capture began (attach), from /proc.
	{"existing", "ts UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, ppid UINTEGER, state VARCHAR, args VARCHAR[], cgroup VARCHAR, service VARCHAR"},
	{"uring_raw", "ts UBIGINT, dur UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, opcode UINTEGER, res BIGINT, user_data UBIGINT, fd INTEGER, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind UTINYINT"},
	{"unlink_raw", "ts UBIGINT, dur UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, name VARCHAR, ret BIGINT, ddev UINTEGER, dino UBIGINT, dgen UINTEGER, target VARCHAR"},
	{"lost", "source VARCHAR, count UBIGINT"},
	// devices: backing_* is a loop device's file, lower a device another is
	// stacked on, throttle_* the blkio cgroup's limits (bytes/s, 0 for none).
	{"devices", "dev UINTEGER, name VARCHAR, backing VARCHAR, backing_dev UINTEGER, backing_ino UBIGINT, lower BOOLEAN, throttle_read_bps UBIGINT, throttle_write_bps UBIGINT"},
	{"interfaces", "name VARCHAR, addr VARCHAR"},
	// cpu_quotas: the CPU quota of each cgroup whose tasks the kernel held
	// off the CPU (offcpu_raw.quota), read at the first such wait of a
	// process (phase 'first', pid that process) and at the end ('end'):
	// quota_us per period_us (-1: none), and cpu.stat's counts then.
	// memory_limits: the limit of each limited memory cgroup whose tasks
	// waited uninterruptibly, read at the first such wait of a process and
	// at the end; refault_bytes: file pages read again after its reclaim
	// evicted them (memory.stat workingset_refault_file), in bytes.
	// io_limits: a process's own cgroup's I/O limits, a row a device (0:
	// no limit of that kind), read at its first uninterruptible wait.
	{"io_limits", "ts UBIGINT, pid UINTEGER, tid UINTEGER, cgroup VARCHAR, version VARCHAR, dev UINTEGER, read_bps UBIGINT, write_bps UBIGINT, read_iops UBIGINT, write_iops UBIGINT"},
	{"memory_limits", "ts UBIGINT, pid UINTEGER, tid UINTEGER, phase VARCHAR, cgroup VARCHAR, version VARCHAR, limit_bytes UBIGINT, high_bytes UBIGINT, refault_bytes UBIGINT"},
	{"cpu_quotas", "ts UBIGINT, pid UINTEGER, tid UINTEGER, phase VARCHAR, cgroup VARCHAR, version VARCHAR, quota_us BIGINT, period_us BIGINT, periods UBIGINT, throttled UBIGINT, throttled_ns UBIGINT"},
	// Derived at the end of a recording, and again by every reader with its
	// own rules (reasons.go): wait_reasons, the reason of each distinct set
	// of a wait's facts; socket_users, the processes seen using an internet
	// socket (a poll of theirs waits on the network).
	{"wait_reasons", waitReasonsColumns},
	{"socket_users", "pid UINTEGER"},
}

// syscallPackedFields are syscall_packed's fields, in the order rows.go
// writes them.
const syscallPackedFields = "ts UBIGINT, dur UBIGINT, pid UINTEGER, tid UINTEGER, comm_id UINTEGER, nr USMALLINT, fd INTEGER, ret BIGINT, req UBIGINT, blocked BOOLEAN, dev UINTEGER, ino UBIGINT, gen UINTEGER, fkind UTINYINT, flags UINTEGER"

// packedTables hold rows that a view gives unpacked (syscall_raw).
var packedTables = []string{"syscall_packed"}

// IsPacked says whether a table's rows are read, and exported, through
// the view that unpacks them rather than as they are stored.
func IsPacked(name string) bool { return slices.Contains(packedTables, name) }

// views are what analyses and `whyslow sql` read. Each joins a file's identity
// (dev, ino, gen) to its latest description.
var views = []string{
	// syscall_raw: the shape schema version 3 stored (docs/trace-format.md):
	// a call without a second file has fd2 -1 and zeros.
	`CREATE OR REPLACE VIEW syscall_raw AS
	 SELECT p.ts, p.dur, p.pid, p.tid, p.comm_id, p.nr, p.fd, p.ret, p.req, p.blocked, p.dev, p.ino, p.gen, p.fkind,
	        coalesce(s.fd2, -1) AS fd2, coalesce(s.dev2, 0) AS dev2, coalesce(s.ino2, 0) AS ino2, coalesce(s.gen2, 0) AS gen2, p.flags
	 FROM (SELECT c.* FROM syscall_packed) p LEFT JOIN syscall_second_file s ON s.tid = p.tid AND s.ts = p.ts`,
	// A file's kind is a code (kinds) in every table, a name in every view:
	// files, syscall_totals and uring are their raw tables named.
	`CREATE OR REPLACE VIEW files AS
	 SELECT r.* REPLACE (k.name AS kind) FROM files_raw r LEFT JOIN kinds k ON k.kind = r.kind`,
	`CREATE OR REPLACE VIEW syscall_totals AS
	 SELECT r.* REPLACE (k.name AS fkind) FROM syscall_totals_raw r LEFT JOIN kinds k ON k.kind = r.fkind`,
	`CREATE OR REPLACE VIEW uring AS
	 SELECT r.* REPLACE (k.name AS fkind) FROM uring_raw r LEFT JOIN kinds k ON k.kind = r.fkind`,
	`CREATE OR REPLACE VIEW syscalls AS
	 SELECT r.ts, r.dur, r.pid, r.tid, c.comm, n.name, n.class, r.fd, r.ret, r.req, r.blocked,
	        r.dev, r.ino, r.gen, k.name AS fkind, r.fd2, r.dev2, r.ino2, r.gen2, r.flags
	 FROM syscall_raw r LEFT JOIN comms c USING (comm_id) LEFT JOIN syscall_names n USING (nr)
	      LEFT JOIN kinds k ON k.kind = r.fkind`,
	`CREATE OR REPLACE VIEW offcpu AS
	 SELECT r.ts, r.start_ts, r.off_ns, r.runq_ns, r.pid, r.tid, c.comm, chr(r.state::INTEGER) AS state,
	        wr.reason, r.stack_id, coalesce(n.name, CASE WHEN r.syscall_nr >= 0 THEN 'syscall_' || r.syscall_nr END) AS syscall,
	        r.waker_pid, r.waker_tid, w.comm AS waker_comm, r.outside,
	        CASE r.waker_side WHEN 1 THEN 'server' WHEN 2 THEN 'client' END AS waker_side, r.waker_dev, r.waker_ino, r.waker_gen,
	        r.waits, r.run_start, r.max_ns, r.quota
	 FROM offcpu_raw r LEFT JOIN comms c USING (comm_id)
	      LEFT JOIN socket_users su USING (pid)
	      LEFT JOIN wait_reasons wr ON wr.stack_id = r.stack_id AND wr.syscall_nr = r.syscall_nr AND wr.state = r.state
	        AND wr.fkind = r.fkind AND wr.waker_fkind = r.waker_fkind AND wr.waker_nr = r.waker_nr
	        AND wr.sockets = (su.pid IS NOT NULL) AND wr.quota = r.quota
	      LEFT JOIN syscall_names n ON n.nr = r.syscall_nr LEFT JOIN comms w ON w.comm_id = r.waker_comm_id`,
	`CREATE OR REPLACE VIEW block AS
	 SELECT r.ts, r.insert_ts, r.issue_ts, r.pid, r.tid, c.comm, r.dev, r.sector, r.bytes, coalesce(o.name, 'other') AS op,
	        r.sync, r.meta, r.fua, r.error, r.fdev, r.ino, r.gen
	 FROM block_raw r LEFT JOIN comms c USING (comm_id) LEFT JOIN (SELECT * FROM (VALUES
	   ` + event.BlockOpsSQL() + `) t(op, name)) o
	   ON o.op = r.op`,
	`CREATE OR REPLACE VIEW file_names AS
	 SELECT dev, ino, gen, arg_max(path, ts) AS path, arg_max(kind, ts) AS kind, bool_or(deleted) AS deleted,
	        arg_max(peer, ts) AS peer, arg_max(local, ts) AS local, max(peer_ino) AS peer_ino
	 FROM files GROUP BY dev, ino, gen`,
	// io: every I/O syscall, streamed or aggregated, one row each (count > 1 for aggregates).
	`CREATE OR REPLACE VIEW io AS
	 SELECT s.ts, s.ts + s.dur AS end_ts, s.dur, s.pid, s.tid, s.comm, s.name, s.class, s.fd, s.ret,
	        CASE WHEN s.ret > 0 AND s.name IN (` + event.ByteSyscallsSQL() + `) THEN s.ret ELSE 0 END AS bytes, 1::UBIGINT AS count, s.dur AS total_ns,
	        s.dev, s.ino, s.gen, s.fkind, f.path, f.peer, true AS exact
	 FROM syscalls s LEFT JOIN file_names f USING (dev, ino, gen)
	 UNION ALL
	 SELECT t.ts, t.last_ts, t.max_ns, t.pid, t.tid, t.comm, t.name, t.class, NULL, NULL,
	        t.bytes, t.count, t.total_ns, t.dev, t.ino, t.gen, t.fkind, f.path, f.peer, false
	 FROM syscall_totals t LEFT JOIN file_names f USING (dev, ino, gen)`,
	// uring_io: io_uring operations with their class and bytes (opcodes are
	// the kernel's enum io_uring_op, a stable ABI; classed in internal/event)
	// and their file's name.
	`CREATE OR REPLACE VIEW uring_io AS
	 SELECT u.*, ` + event.UringClassSQL("u.opcode") + ` AS class,
	        ` + event.UringBytesSQL("u.opcode", "u.res") + ` AS bytes,
	        f.path, f.peer
	 FROM uring u LEFT JOIN file_names f USING (dev, ino, gen)`,
	// unlinks: removed names made absolute with the directory the kernel resolved.
	`CREATE OR REPLACE VIEW unlinks AS
	 SELECT u.ts, u.dur, u.pid, u.tid, u.comm, u.name AS syscall, u.ret,
	        CASE WHEN u.target LIKE '/%' THEN u.target
	             WHEN f.path IS NULL THEN u.target
	             WHEN f.path = '/' THEN '/' || u.target
	             ELSE f.path || '/' || u.target END AS path
	 FROM unlink_raw u LEFT JOIN file_names f ON f.dev = u.ddev AND f.ino = u.dino AND f.gen = u.dgen`,
	// disk: fkind 'blockdev' is the device's own inode: filesystem metadata and
	// journal. lower marks a request that carries a stacked device's data (a
	// loop device's backing file, a dm device's member): the same bytes are
	// counted on the device above.
	`CREATE OR REPLACE VIEW disk AS
	 SELECT b.*, d.name AS device, f.path, f.kind AS fkind,
	        -- Never negative: a request whose times came out of order (a
	        -- damaged recording, a record the kernel reused) takes none.
	        CASE WHEN b.ts >= b.issue_ts THEN b.ts - b.issue_ts ELSE 0 END AS service_ns,
	        CASE WHEN b.issue_ts >= b.insert_ts THEN b.issue_ts - b.insert_ts ELSE 0 END AS queue_ns,
	        CASE WHEN b.ts >= b.insert_ts THEN b.ts - b.insert_ts ELSE 0 END AS total_ns,
	        coalesce(d.lower, false) OR (b.fdev, b.ino) IN (SELECT backing_dev, backing_ino FROM devices WHERE backing_ino > 0) AS lower
	 FROM block b LEFT JOIN devices d USING (dev) LEFT JOIN file_names f ON f.dev = b.fdev AND f.ino = b.ino AND f.gen = b.gen`,
	`CREATE OR REPLACE VIEW proc_samples AS
	 SELECT r.ts, r.pid, r.tid, c.comm, chr(r.state::INTEGER) AS state,
	        coalesce(n.name, CASE WHEN r.syscall_nr >= 0 THEN 'syscall_' || r.syscall_nr END) AS syscall,
	        r.fd, k.name AS fkind, r.object, r.wchan, r.stack_id, r.ran_ns, r.run_delay_ns, r.interval_ns, r.was_runnable, r.throttled, r.sockets, r.on_path, r.timeout_at, r.reclaim
	 FROM proc_samples_raw r LEFT JOIN comms c USING (comm_id) LEFT JOIN syscall_names n ON n.nr = r.syscall_nr
	      LEFT JOIN kinds k ON k.kind = r.fkind`,
	`CREATE OR REPLACE VIEW threads AS
	 SELECT tid, arg_max(pid, ts) AS pid, arg_max(comm, ts) AS comm FROM (
	   SELECT pid, tid, comm, ts FROM syscalls UNION ALL SELECT pid, tid, comm, ts FROM offcpu
	   UNION ALL SELECT pid, tid, comm, ts FROM execs UNION ALL SELECT pid, tid, comm, ts FROM cputime
	   UNION ALL SELECT pid, tid, comm, ts FROM existing)
	 WHERE comm IS NOT NULL AND comm <> '' GROUP BY tid`,
	// A process is named after its main thread (tid = pid) when it was seen:
	// a worker thread's name ("pool-3") is not the process's.
	`CREATE OR REPLACE VIEW processes AS
	 SELECT pid, coalesce(arg_max(comm, ts) FILTER (WHERE tid = pid), arg_max(comm, ts)) AS comm, min(ts) AS first_ts FROM (
	   SELECT pid, tid, comm, ts FROM syscalls UNION ALL SELECT pid, tid, comm, ts FROM offcpu
	   UNION ALL SELECT pid, tid, comm, ts FROM execs UNION ALL SELECT pid, tid, comm, ts FROM cputime
	   UNION ALL SELECT pid, tid, comm, ts FROM syscall_totals UNION ALL SELECT pid, tid, comm, ts FROM existing) GROUP BY pid`,
}
