#!/bin/sh
# One /popularity request against a fresh word-pop server, for
# `whyslow run -- one-request.sh`: the server, its request thread and the
# client are all followed. Scratch files go to $SLOWDISK_DIR (or /tmp).
set -eu
. "$(cd "$(dirname "$0")" && pwd)/../lib.sh"
port=$(free_port)
WORDPOP_SCRATCH=${SLOWDISK_DIR:-/tmp} WORDPOP_PORT=$port "$py" "$here/app.py" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null || true' EXIT
wait_port "$port"
"$py" "$here/client.py" "http://127.0.0.1:$port/popularity/linux"
