#!/bin/sh
# Four processes writing 1 MiB records at once on a slow disk, like
# `iozone -i 0 -t 4` in "Detecting Disk I/O-bound Applications".
# With WHYSLOW=1 the writers run under `whyslow run`.
set -eu
. "$(cd "$(dirname "$0")" && pwd)/../lib.sh"
if [ -z "${SLOWDISK_DIR:-}" ]; then
	exec "$bin/slowdisk" --write-bps 8M --dirty-bytes 16M --dirty-background-bytes 8M -- "$0" "$@"
fi
measured "$py" "$here/writers.py" "$SLOWDISK_DIR" --procs 4 --mib 16
