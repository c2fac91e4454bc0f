#!/bin/sh
# Median seconds of ten /popularity requests to a fresh word-pop server (the
# Flask story: each request writes and reads 1000 temp files), for the
# realistic-work rows of BENCHMARKS.md. Scratch files go to /dev/shm: on
# /var/tmp the disk's own swings (journal commits, writeback of the previous
# run) moved single pairs from 0.35 to 1.14, hiding what tracing costs.
set -eu
. "$(cd "$(dirname "$0")" && pwd)/../examples/lib.sh"
here=$(cd "$(dirname "$0")/../examples/word-pop" && pwd)
port=$(free_port)
WORDPOP_SCRATCH=/dev/shm WORDPOP_PORT=$port "$py" "$here/app.py" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; wait $srv 2>/dev/null || true' EXIT
wait_port "$port"
"$py" "$here/client.py" "http://127.0.0.1:$port/popularity/linux" 10 | sort -n | sed -n 5p | cut -d' ' -f1
