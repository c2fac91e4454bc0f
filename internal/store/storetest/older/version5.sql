-- A recording of version 6 made one of version 5, as the whyslow of
-- version 5 wrote it (docs/trace-format.md, "Versions"): without the
-- sampled capture's table and view. Refused when the recording holds
-- samples: version 5 could not hold them.
SELECT CASE WHEN EXISTS (SELECT 1 FROM proc_samples_raw) THEN error('the recording holds facts a version 5 recording could not') END;
DROP VIEW proc_samples;
DROP TABLE proc_samples_raw;
UPDATE meta SET value = '5' WHERE key = 'schema_version';
