package analysis

import "github.com/whyslow/whyslow/internal/event"

// SQL fragments more than one analysis uses, written once here.

// trafficSQL splits a call's file kind (fkind) the way usage does:
// event.FileKind.Traffic in SQL.
const trafficSQL = `CASE WHEN fkind IN ('file','blockdev') THEN 'file' WHEN fkind = 'socket' THEN 'net'
	WHEN fkind IN ('pipe','unix') THEN 'ipc' ELSE 'other' END`

// readSQL and writeSQL tell reads from writes among calls that move bytes
// (rows with class and name): a recv is a read, a send a write.
const readSQL = `(class = 'read' OR name IN ('recvfrom','recvmsg'))`
const writeSQL = `(class = 'write' OR name IN ('sendto','sendmsg'))`

// byteSyscalls are the syscalls whose return value is bytes moved (the io
// view's bytes column), for `name IN (...)`: not accept or connect.
var byteSyscalls = event.ByteSyscallsSQL()

// dirtierSQL names, per file, the process that dirtied most of its pages:
// the one a write-back of the file is charged to, not the flusher thread.
const dirtierSQL = `SELECT dev, ino, gen, arg_max(pid, pages) AS pid, arg_max(comm, pages) AS comm
	FROM dirtied GROUP BY dev, ino, gen`
