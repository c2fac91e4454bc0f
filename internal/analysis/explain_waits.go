package analysis

import (
	"database/sql"
	"fmt"
)

// pollSyscalls wait on many fds at once: for a thread that moved no socket
// data, that is waiting for work.
const pollSyscalls = `'poll','select','epoll_wait','epoll_pwait','epoll_pwait2','ppoll','pselect6'`

// targetWaits builds the temp table target_offcpu: the target's off-CPU
// intervals in the window, each with what it waited on:
//   - object: the file or peer of the syscall in progress (a blocked syscall
//     streamed at every level), or of the io_uring operations pending;
//   - reason: the classifier's, except that an io_uring wait takes the reason
//     of the operations it waited for (disk-read, disk-write, sync, network);
//   - for_work: waiting for work that had not come (accept; a poll in a thread
//     that moved no socket data), no slowness of the target's own. A thread
//     moved socket data if a call of its was seen doing so: a blocked call,
//     a counted one (--syscalls), or one the CPU sampler found it in (the
//     default level sees no call that does not wait: a client's sends and
//     receives after its poll never do). Over a Unix socket only receiving
//     counts: a logger that sends to syslog is not in a conversation, a
//     client that reads its server's replies is (pgbench over the socket of
//     a local PostgreSQL waited "for work" before).
//
// It also makes target_threads, and target_pids for a target of many
// processes (useTargets). Every explanation of the target's time reads
// these, so the rules live here once.
func (s *Source) targetWaits(pids []uint32, win window) error {
	if err := s.useTargets(pids); err != nil {
		return err
	}
	in := s.inTargets("pid", pids)
	offCPU := s.hasRows("offcpu_raw")
	q := `CREATE OR REPLACE TEMP TABLE target_offcpu AS
	  WITH o AS (SELECT * FROM offcpu WHERE ` + in + ` AND ts > $b AND start_ts < $e),
	  calls AS (
	    SELECT s.tid, s.ts, s.ts + s.dur AS end_ts, coalesce(f.peer, f.path) AS object
	    FROM syscall_raw s LEFT JOIN file_names f USING (dev, ino, gen)
	    WHERE s.` + in + ` AND s.blocked),
	  moving AS (SELECT nr, name FROM syscall_names WHERE class IN ('read','write','net') AND name NOT IN ('accept','accept4')),
	  receiving AS (SELECT nr, name FROM syscall_names WHERE name IN ('read','readv','recvfrom','recvmsg')),
	  inet AS (SELECT kind FROM kinds WHERE name = 'socket'),
	  unix AS (SELECT kind FROM kinds WHERE name = 'unix'),
	  socket_movers AS (
	    SELECT DISTINCT tid FROM syscall_raw WHERE ` + in + ` AND (fkind IN (SELECT kind FROM inet) AND nr IN (SELECT nr FROM moving)
	      OR fkind IN (SELECT kind FROM unix) AND nr IN (SELECT nr FROM receiving))
	    UNION
	    SELECT DISTINCT tid FROM syscall_totals WHERE ` + in + ` AND (fkind = 'socket' AND name IN (SELECT name FROM moving)
	      OR fkind = 'unix' AND name IN (SELECT name FROM receiving))
	    UNION
	    SELECT DISTINCT tid FROM samples WHERE ` + in + ` AND (fkind IN (SELECT kind FROM inet) AND syscall_nr IN (SELECT nr FROM moving)
	      OR fkind IN (SELECT kind FROM unix) AND syscall_nr IN (SELECT nr FROM receiving)))
	  SELECT o.ts, o.start_ts, o.off_ns, o.runq_ns, o.pid, o.tid, o.comm, o.state, o.reason, o.stack_id,
	         o.syscall, o.waker_pid, o.waker_tid, o.waker_comm,
	         coalesce(CASE WHEN c.end_ts >= o.ts - o.runq_ns THEN c.object END,
	                  CASE WHEN o.waker_side = 'server' THEN coalesce(wf.local, wf.path) END) AS object,
	         ` + forWorkSQL("o", "o.tid NOT IN (SELECT tid FROM socket_movers)") + ` AS for_work, o.waker_side
	  FROM o ASOF LEFT JOIN calls c ON c.tid = o.tid AND c.ts <= o.start_ts
	    LEFT JOIN file_names wf ON wf.dev = o.waker_dev AND wf.ino = o.waker_ino AND wf.gen = o.waker_gen
	         AND o.waker_side IS NOT NULL`
	args := []any{sql.Named("b", win.begin), sql.Named("e", win.end)}
	if !offCPU {
		q, args = emptyTargetOffCPU, nil
	}
	if _, err := s.exec(q, args...); err != nil {
		return fmt.Errorf("collecting the target's waits: %w", err)
	}
	if offCPU {
		if _, err := s.exec(pollRunsSQL("target_offcpu")); err != nil {
			return fmt.Errorf("joining a client's polls: %w", err)
		}
	}
	// target_threads: each target thread's latest name, from the small
	// tables (the threads view reads every syscall for it).
	q = `CREATE OR REPLACE TEMP TABLE target_threads AS
	  SELECT pid, tid, arg_max(comm, ts) AS comm FROM (
	    SELECT pid, tid, comm, ts FROM target_offcpu UNION ALL SELECT pid, tid, comm, ts FROM cputime WHERE ` + in + `
	    UNION ALL SELECT pid, tid, comm, ts FROM execs WHERE ` + in + ` UNION ALL SELECT pid, tid, comm, ts FROM existing WHERE ` + in + `)
	  WHERE comm IS NOT NULL AND comm <> '' GROUP BY pid, tid`
	if _, err := s.exec(q); err != nil {
		return fmt.Errorf("naming the target's threads: %w", err)
	}
	if !offCPU || !s.hasRows("uring") {
		return nil
	}
	// io_uring: the submitter waits in io_uring_enter for completions; the
	// operations in flight then say what it waited for.
	q = `UPDATE target_offcpu t SET reason = r.reason, object = r.object FROM (
	       SELECT t.tid, t.start_ts, arg_max(CASE
	           WHEN u.fkind = 'socket' OR u.class IN ('send', 'recv') THEN 'network'
	           WHEN u.class = 'read' THEN 'disk-read' WHEN u.class = 'write' THEN 'disk-write'
	           WHEN u.class = 'sync' THEN 'sync' ELSE 'other' END, u.dur) AS reason,
	         arg_max(coalesce(u.peer, u.path), u.dur) AS object
	       FROM target_offcpu t JOIN uring_io u ON u.pid = t.pid AND u.ts < t.ts AND u.ts + u.dur > t.start_ts
	       WHERE t.syscall = 'io_uring_enter' AND t.reason = 'other'
	       GROUP BY t.tid, t.start_ts) r
	     WHERE t.tid = r.tid AND t.start_ts = r.start_ts`
	if _, err := s.exec(q); err != nil {
		return fmt.Errorf("resolving io_uring waits: %w", err)
	}
	return nil
}

// emptyTargetOffCPU makes target_offcpu for a target that never went off
// CPU: the shape targetWaits' query gives it, without the query (16 ms to
// plan). A test keeps the two shapes the same.
const emptyTargetOffCPU = `CREATE OR REPLACE TEMP TABLE target_offcpu (ts UBIGINT, start_ts UBIGINT, off_ns UBIGINT,
	  runq_ns UBIGINT, pid UINTEGER, tid UINTEGER, comm VARCHAR, state VARCHAR, reason VARCHAR, stack_id INTEGER,
	  syscall VARCHAR, waker_pid UINTEGER, waker_tid UINTEGER, waker_comm VARCHAR, object VARCHAR, for_work BOOLEAN,
	  waker_side VARCHAR)`

// targetIO says what target_io holds: the steps that read it are skipped
// when it is empty.
type targetIO struct{ rows bool }

// targetIO makes target_calls and target_io, after targetWaits: the target's
// I/O, one shape for syscalls and io_uring. Explain reads them; requests do not.
func (s *Source) targetIO(pids []uint32) (targetIO, error) {
	in := s.inTargets("pid", pids)
	// target_calls: the target's streamed calls summed per thread, file and
	// syscall, on the numeric table: one pass over what can be millions of
	// rows, which everything below reads instead.
	q := `CREATE OR REPLACE TEMP TABLE target_calls AS
	  SELECT tid, dev, ino, gen, fkind, nr, sum(CASE WHEN ret > 0 THEN ret ELSE 0 END) AS ret_bytes,
	         count(*) AS ops, sum(dur) AS wait_ns
	  FROM syscall_raw WHERE ` + in + ` GROUP BY ALL`
	if _, err := s.exec(q); err != nil {
		return targetIO{}, fmt.Errorf("summing the target's calls: %w", err)
	}
	if inputs, err := s.ioInputs(in); err != nil || !inputs {
		return targetIO{}, err
	}
	// target_io: the target's I/O, one shape for syscalls and io_uring
	// operations: bytes each way, operations, and time waited on the file.
	// An io_uring operation's time is not a thread's; the time the submitter
	// waited in io_uring_enter for it is.
	//
	// A table, summed per thread, file and syscall: every explanation sums
	// it several ways, and the streamed calls are summed on the numeric
	// table before any name is joined (the io view names every call).
	q = `CREATE OR REPLACE TEMP TABLE target_io AS
	  WITH named AS (
	    SELECT c.tid, c.dev, c.ino, c.gen, k.name AS fkind, n.name, n.class,
	           CASE WHEN n.name IN (` + byteSyscalls + `) THEN c.ret_bytes ELSE 0 END AS bytes, c.ops, c.wait_ns
	    FROM target_calls c LEFT JOIN syscall_names n USING (nr) LEFT JOIN kinds k ON k.kind = c.fkind
	    UNION ALL
	    SELECT tid, dev, ino, gen, fkind, name, class, bytes, count, total_ns FROM syscall_totals WHERE ` + in + `)
	  SELECT b.tid, f.path, f.peer, b.fkind, b.dev, b.ino, b.gen, b.name,
	         CASE WHEN ` + readSQL + ` THEN b.bytes ELSE 0 END AS rbytes,
	         CASE WHEN ` + writeSQL + ` THEN b.bytes ELSE 0 END AS wbytes,
	         b.ops, b.wait_ns
	  FROM named b LEFT JOIN file_names f USING (dev, ino, gen)
	  UNION ALL
	  SELECT tid, path, peer, fkind, dev, ino, gen, 'io_uring',
	         CASE WHEN class IN ('read','recv') THEN bytes ELSE 0 END, CASE WHEN class IN ('write','send') THEN bytes ELSE 0 END,
	         1, 0
	  FROM uring_io WHERE ` + in + `
	  UNION ALL
	  SELECT tid, CASE WHEN reason <> 'network' THEN object END, CASE WHEN reason = 'network' THEN object END,
	         CASE WHEN reason = 'network' THEN 'socket' ELSE 'file' END, NULL, NULL, NULL, 'io_uring_enter',
	         0, 0, 0, off_ns - runq_ns
	  FROM target_offcpu WHERE syscall = 'io_uring_enter' AND object IS NOT NULL
	  UNION ALL
	  SELECT tid, path, NULL, 'file', NULL, NULL, NULL, syscall, 0, 0, 1, dur
	  FROM unlinks WHERE ` + in
	if s.WaitsOnly() {
		// No syscall returned its bytes: count what the target dirtied in
		// the page cache (written) and read from disk (read), by file.
		q += `
	  UNION ALL
	  SELECT d.tid, f.path, NULL, 'file', d.dev, d.ino, d.gen, 'dirtied', 0, d.pages * 4096, 0, 0
	  FROM dirtied d LEFT JOIN file_names f USING (dev, ino, gen) WHERE d.` + in + `
	  UNION ALL
	  SELECT tid, path, NULL, 'file', fdev, ino, gen, 'disk-read', bytes, 0, 0, 0
	  FROM disk WHERE ` + in + ` AND op = 'read' AND NOT lower AND fkind <> 'blockdev'
	  UNION ALL
	  SELECT s.tid, coalesce(f.path, CASE WHEN s.path LIKE '/%' THEN s.path END), f.peer, coalesce(f.kind, 'file'),
	         s.dev, s.ino, s.gen, n.name, 0, 0, 0, w.ns
	  FROM samples s JOIN (` + sampleWeights(in) + `) w USING (tid) JOIN syscall_names n ON n.nr = s.syscall_nr
	    LEFT JOIN file_names f USING (dev, ino, gen)
	  WHERE s.` + in + ` AND ` + sampleOnFile
	}
	if _, err := s.exec(q); err != nil {
		return targetIO{}, fmt.Errorf("collecting the target's I/O: %w", err)
	}
	io := targetIO{rows: s.everyStep}
	if err := s.queryRow("SELECT $1 OR EXISTS (SELECT 1 FROM target_io)", io.rows).Scan(&io.rows); err != nil {
		return targetIO{}, fmt.Errorf("collecting the target's I/O: %w", err)
	}
	return io, nil
}

// sampleOnFile: a CPU sample of the target in the kernel, on a file.
const sampleOnFile = `NOT s.user AND (s.ino <> 0 OR s.path LIKE '/%')`

// ioInputs says whether any of target_io's sources holds a row of the
// target: when none does, target_io is not made (its query takes ~20 ms to
// plan) and the steps that read it are skipped.
func (s *Source) ioInputs(in string) (bool, error) {
	for _, t := range []string{"syscall_raw", "syscall_totals", "uring", "unlink_raw"} {
		if s.hasRows(t) {
			return true, nil
		}
	}
	if !s.WaitsOnly() {
		return false, nil
	}
	if s.hasRows("dirtied") {
		return true, nil
	}
	var inputs bool
	err := s.queryRow(`SELECT EXISTS (SELECT 1 FROM block_raw WHERE ` + in + `)
	  OR EXISTS (SELECT 1 FROM samples s WHERE s.` + in + ` AND ` + sampleOnFile + `)`).Scan(&inputs)
	if err != nil {
		return false, fmt.Errorf("collecting the target's I/O: %w", err)
	}
	return inputs, nil
}

// kernelCPU splits the target's time inside syscalls, less the time it was
// off CPU there, by syscall class: the kernel's part of its CPU time.
func (x *Explanation) kernelCPU(s *Source, pids []uint32) error {
	in := s.inTargets("pid", pids)
	if s.WaitsOnly() {
		return x.sampledKernelCPU(s, in)
	}
	// Numeric tables only: the io view names every row's file, which costs
	// seconds on a recording of millions of calls.
	q := `WITH inside AS (
	        SELECT n.class, sum(c.wait_ns) AS ns FROM target_calls c JOIN syscall_names n USING (nr) GROUP BY n.class
	        UNION ALL SELECT class, sum(total_ns) FROM syscall_totals WHERE ` + in + ` GROUP BY class
	        UNION ALL SELECT 'unlink', sum(dur) FROM unlink_raw WHERE ` + in + `),
	      off AS (
	        SELECT n.class, sum(o.off_ns) AS ns FROM target_offcpu o JOIN syscall_names n ON n.name = o.syscall GROUP BY 1)
	      SELECT i.class, greatest(sum(i.ns) - coalesce(any_value(off.ns), 0), 0)
	      FROM inside i LEFT JOIN off USING (class) WHERE i.class IS NOT NULL GROUP BY i.class`
	return x.kernelCPUFrom(s, q)
}

// kernelCPUFrom fills kernel_cpu_s from a query of (class, ns) rows.
func (x *Explanation) kernelCPUFrom(s *Source, q string) error {
	rows, err := s.query(q)
	if err != nil {
		return fmt.Errorf("splitting kernel time: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var class string
		var ns float64
		if err := rows.Scan(&class, &ns); err != nil {
			return err
		}
		if ns > 0 {
			x.Time.KernelCPUS[class] = ns / 1e9
		}
	}
	return rows.Err()
}

// sampleWeights is each target thread's on-CPU time per CPU sample taken of
// it: a sample stands for that much of the thread's CPU time.
func sampleWeights(in string) string {
	return `SELECT s.tid, any_value(c.ns) / count(*) AS ns FROM samples s
	   JOIN (SELECT tid, sum(oncpu_ns) AS ns FROM cputime WHERE ` + in + ` GROUP BY tid) c USING (tid)
	   WHERE s.` + in + ` GROUP BY s.tid`
}

// sampledKernelCPU: with no syscall hooked (default level), the kernel's
// part of the CPU time by syscall class comes from the timer samples: each
// sample inside a syscall counts its thread's CPU time per sample.
func (x *Explanation) sampledKernelCPU(s *Source, in string) error {
	if !s.hasRows("samples") {
		return nil
	}
	q := `SELECT n.class, sum(w.ns) FROM samples s JOIN (` + sampleWeights(in) + `) w USING (tid)
	      JOIN syscall_names n ON n.nr = s.syscall_nr
	      WHERE s.` + in + ` AND NOT s.user AND n.class IS NOT NULL AND n.class <> 'none' GROUP BY n.class`
	return x.kernelCPUFrom(s, q)
}
