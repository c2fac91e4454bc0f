#!/bin/sh
# make bench: installs the comparison tools, then runs the benchmark driver.
set -eu
cd "$(dirname "$0")/.."
for t in strace:strace perf:linux-perf bpftrace:bpftrace fio:fio /usr/bin/time:time; do
	command -v "${t%%:*}" >/dev/null 2>&1 || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${t#*:}" >/dev/null; }
done
exec go run ./bench -whyslow bin/whyslow -out BENCHMARKS.md "$@"
