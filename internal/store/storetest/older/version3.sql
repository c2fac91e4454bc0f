-- A recording of version 4 made one of version 3: syscall_raw a table of
-- the rows and columns version 4's view gives, no syscall_packed or
-- syscall_second_file.
CREATE TABLE syscall_raw_v3 AS SELECT * FROM syscall_raw;
DROP VIEW syscall_raw;
ALTER TABLE syscall_raw_v3 RENAME TO syscall_raw;
DROP TABLE syscall_packed;
DROP TABLE syscall_second_file;
UPDATE meta SET value = '3' WHERE key = 'schema_version';
