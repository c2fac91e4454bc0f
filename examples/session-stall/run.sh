#!/bin/sh
# The session stall of "Finding the Root Cause of a Web Request Latency": a
# board app answers a request every 0.5 s; meanwhile another process dirties
# data and runs sync, and one request stalls. Prints each latency (ms).
# With WHYSLOW=1 the app server runs under `whyslow run` (it sees the sync).
set -eu
. "$(cd "$(dirname "$0")" && pwd)/../lib.sh"
if [ -z "${SLOWDISK_DIR:-}" ]; then
	exec "$bin/slowdisk" --write-bps 8M --dirty-bytes 256M --dirty-background-bytes 128M -- "$0" "$@"
fi
port=$(free_port)
if [ "${WHYSLOW:-}" = 1 ]; then
	"$bin/whyslow" run ${WHYSLOW_JSON:+--json "$WHYSLOW_JSON"} ${WHYSLOW_OUT:+-o "$WHYSLOW_OUT"} -- "$py" "$here/app.py" "$SLOWDISK_DIR" "$port" &
else
	"$py" "$here/app.py" "$SLOWDISK_DIR" "$port" &
fi
srv=$!
trap 'kill -TERM $srv 2>/dev/null; wait $srv 2>/dev/null || true' EXIT
wait_port "$port"
"$py" "$here/client.py" "http://127.0.0.1:$port/board" 16 &
cli=$!
sleep 2
sh "$here/noisy.sh" "$SLOWDISK_DIR" 10
wait $cli
kill -TERM $srv # whyslow run passes SIGTERM on to the app, then explains
wait $srv 2>/dev/null || true
trap - EXIT
