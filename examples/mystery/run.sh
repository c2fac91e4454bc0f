#!/bin/sh
# The three mystery programs of "Nancy Drew and the Case of the Slow Program":
#   run.sh network   waits on a slow loopback server (answers after 2 s)
#   run.sh cpu       adds numbers for 2 s
#   run.sh writes    writes 48 MiB buffered, twice in a row on a slow disk;
#                    the second run is slow: the first run's pages are still being flushed
#   run.sh fsync     one run with fsync: the cost is paid inside the program
# With WHYSLOW=1 the measured run goes through `whyslow run`.
set -eu
. "$(cd "$(dirname "$0")" && pwd)/../lib.sh"
case "${1:-}" in
network)
	port=$(free_port)
	"$py" "$here/slow_server.py" "$port" 2 &
	srv=$!
	trap 'kill $srv 2>/dev/null || true' EXIT
	wait_port "$port"
	measured "$py" "$here/slow_network.py" "$port"
	;;
cpu)
	measured "$py" "$here/adder.py" 2
	;;
writes | fsync)
	if [ -z "${SLOWDISK_DIR:-}" ]; then
		exec "$bin/slowdisk" --write-bps 8M --dirty-bytes 64M --dirty-background-bytes 32M -- "$0" "$@"
	fi
	if [ "$1" = fsync ]; then
		measured "$py" "$here/writer.py" "$SLOWDISK_DIR/out" 48 --fsync
		exit 0
	fi
	echo "first run:" >&2
	t0=$("$py" -c 'import time; print(time.monotonic())')
	"$py" "$here/writer.py" "$SLOWDISK_DIR/out1" 48
	"$py" -c 'import sys, time; print("seconds: %.3f" % (time.monotonic() - float(sys.argv[1])), file=sys.stderr)' "$t0"
	echo "second run:" >&2
	measured "$py" "$here/writer.py" "$SLOWDISK_DIR/out2" 48
	;;
*)
	echo "usage: run.sh network|cpu|writes|fsync" >&2
	exit 2
	;;
esac
