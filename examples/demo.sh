#!/bin/sh
# make demo: whyslow solves the seed cases, one `whyslow run` each.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../bin
banner() { printf '\n\033[1m=== %s\033[0m\n' "$*" >&2; }

banner "word-pop: a Flask request writing and reading 1000 temp files on a slow disk"
"$bin/slowdisk" --write-bps 3M --dirty-bytes 4M --dirty-background-bytes 2M -- \
	"$bin/whyslow" run -- "$here/word-pop/one-request.sh"

banner "mystery 1: a program waiting on a slow network response"
WHYSLOW=1 "$here/mystery/run.sh" network

banner "mystery 2: a CPU-bound program"
WHYSLOW=1 "$here/mystery/run.sh" cpu

banner "mystery 3: writing 48 MiB, second run in a row on a slow disk"
WHYSLOW=1 "$here/mystery/run.sh" writes
