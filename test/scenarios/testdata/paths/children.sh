#!/bin/sh
# A script whose child does the slow part: 8 MiB of O_DIRECT writes to $1.
set -e
echo start
dd if=/dev/zero of="$1/out.bin" bs=1M count=8 oflag=direct 2>/dev/null
echo done
