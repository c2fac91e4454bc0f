-- A recording of version 5 made one of version 4, as the whyslow of
-- version 4 wrote it (docs/trace-format.md, "Versions"): without the
-- tables and columns version 5 added, with version 4's views. Refused when
-- the recording holds a fact version 4 could not: the story would change.
SELECT CASE WHEN EXISTS (SELECT 1 FROM cpu_quotas) OR EXISTS (SELECT 1 FROM memory_limits) OR EXISTS (SELECT 1 FROM io_limits)
    OR EXISTS (SELECT 1 FROM offcpu_raw WHERE waits <> 1 OR run_start <> start_ts OR max_ns <> off_ns OR quota)
    OR EXISTS (SELECT 1 FROM existing WHERE cgroup <> '')
  THEN error('the recording holds facts a version 4 recording could not') END;
DROP TABLE cpu_quotas;
DROP TABLE memory_limits;
DROP TABLE io_limits;
ALTER TABLE offcpu_raw DROP COLUMN waits;
ALTER TABLE offcpu_raw DROP COLUMN run_start;
ALTER TABLE offcpu_raw DROP COLUMN max_ns;
ALTER TABLE offcpu_raw DROP COLUMN quota;
ALTER TABLE existing DROP COLUMN cgroup;
ALTER TABLE wait_reasons DROP COLUMN quota;
CREATE OR REPLACE VIEW offcpu AS
 SELECT r.ts, r.start_ts, r.off_ns, r.runq_ns, r.pid, r.tid, c.comm, chr(r.state::INTEGER) AS state,
        wr.reason, r.stack_id, coalesce(n.name, CASE WHEN r.syscall_nr >= 0 THEN 'syscall_' || r.syscall_nr END) AS syscall,
        r.waker_pid, r.waker_tid, w.comm AS waker_comm, r.outside,
        CASE r.waker_side WHEN 1 THEN 'server' WHEN 2 THEN 'client' END AS waker_side, r.waker_dev, r.waker_ino, r.waker_gen
 FROM offcpu_raw r LEFT JOIN comms c USING (comm_id)
      LEFT JOIN socket_users su USING (pid)
      LEFT JOIN wait_reasons wr ON wr.stack_id = r.stack_id AND wr.syscall_nr = r.syscall_nr AND wr.state = r.state
        AND wr.fkind = r.fkind AND wr.waker_fkind = r.waker_fkind AND wr.waker_nr = r.waker_nr
        AND wr.sockets = (su.pid IS NOT NULL)
      LEFT JOIN syscall_names n ON n.nr = r.syscall_nr LEFT JOIN comms w ON w.comm_id = r.waker_comm_id;
CREATE OR REPLACE VIEW disk AS
 SELECT b.*, d.name AS device, f.path, f.kind AS fkind, (b.ts - b.issue_ts) AS service_ns,
        (b.issue_ts - b.insert_ts) AS queue_ns, (b.ts - b.insert_ts) AS total_ns,
        coalesce(d.lower, false) OR (b.fdev, b.ino) IN (SELECT backing_dev, backing_ino FROM devices WHERE backing_ino > 0) AS lower
 FROM block b LEFT JOIN devices d USING (dev) LEFT JOIN file_names f ON f.dev = b.fdev AND f.ino = b.ino AND f.gen = b.gen;
UPDATE meta SET value = '4' WHERE key = 'schema_version';
