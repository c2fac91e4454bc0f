#!/bin/sh
# word-pop on a slow disk: times /popularity (1000 temp files per request) and
# /popular (in memory). With WHYSLOW=1, `whyslow attach` watches the Flask
# server during each request (JSON to $WHYSLOW_JSON for /popularity and
# $WHYSLOW_JSON_POPULAR for /popular, when set).
set -eu
. "$(cd "$(dirname "$0")" && pwd)/../lib.sh"
if [ -z "${SLOWDISK_DIR:-}" ]; then
	exec "$bin/slowdisk" --write-bps 3M --dirty-bytes 4M --dirty-background-bytes 2M -- "$0" "$@"
fi
port=$(free_port)
WORDPOP_SCRATCH=$SLOWDISK_DIR WORDPOP_PORT=$port "$py" "$here/app.py" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null || true' EXIT
wait_port "$port"
"$py" "$here/client.py" "http://127.0.0.1:$port/" >/dev/null
# request PATH [JSON]: one timed request, watched by whyslow attach when WHYSLOW=1
request() {
	if [ "${WHYSLOW:-}" = 1 ]; then
		"$bin/whyslow" attach -p "$srv" ${2:+--json "$2"} ${WHYSLOW_OUT:+-o "$WHYSLOW_OUT"} &
		att=$!
		sleep 1
	fi
	"$py" "$here/client.py" "http://127.0.0.1:$port$1"
	if [ "${WHYSLOW:-}" = 1 ]; then
		kill -INT $att
		wait $att || true
	fi
}
request /popularity/linux "${WHYSLOW_JSON:-}"
WHYSLOW_OUT="" request /popular/linux "${WHYSLOW_JSON_POPULAR:-}"
