-- A recording of version 8 made one of version 7, as the whyslow of
-- version 7 wrote it (docs/trace-format.md, "Versions"): the sampled
-- capture's looks without their wait's timeout and their memory cgroup's
-- limit. Refused when a look had either.
SELECT CASE WHEN EXISTS (SELECT 1 FROM proc_samples_raw WHERE timeout_at <> 0 OR reclaim)
  THEN error('the recording holds facts a version 7 recording could not') END;
DROP VIEW proc_samples;
ALTER TABLE proc_samples_raw DROP COLUMN timeout_at;
ALTER TABLE proc_samples_raw DROP COLUMN reclaim;
CREATE VIEW proc_samples AS
 SELECT r.ts, r.pid, r.tid, c.comm, chr(r.state::INTEGER) AS state,
        coalesce(n.name, CASE WHEN r.syscall_nr >= 0 THEN 'syscall_' || r.syscall_nr END) AS syscall,
        r.fd, k.name AS fkind, r.object, r.wchan, r.stack_id, r.ran_ns, r.run_delay_ns, r.interval_ns, r.was_runnable, r.throttled, r.sockets, r.on_path
 FROM proc_samples_raw r LEFT JOIN comms c USING (comm_id) LEFT JOIN syscall_names n ON n.nr = r.syscall_nr
      LEFT JOIN kinds k ON k.kind = r.fkind;
UPDATE meta SET value = '7' WHERE key = 'schema_version';
