#!/bin/sh
# Someone else on the machine: dirties a lot of data, then runs sync.
# usage: noisy.sh DIR MIB
dd if=/dev/zero of="$1/backup.tmp" bs=1M count="$2" status=none
sync
rm -f "$1/backup.tmp"
