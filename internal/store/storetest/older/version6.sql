-- A recording of version 7 made one of version 6, as the whyslow of
-- version 6 wrote it (docs/trace-format.md, "Versions"): without the
-- service a process named itself. Refused when one did.
SELECT CASE WHEN EXISTS (SELECT 1 FROM execs WHERE service <> '') OR EXISTS (SELECT 1 FROM existing WHERE service <> '')
  THEN error('the recording holds facts a version 6 recording could not') END;
ALTER TABLE execs DROP COLUMN service;
ALTER TABLE existing DROP COLUMN service;
UPDATE meta SET value = '6' WHERE key = 'schema_version';
