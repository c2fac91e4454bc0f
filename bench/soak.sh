#!/bin/sh
# bench/soak.sh [MINUTES]: the exporter and top running side by side under
# process churn (bench/churn: new process and thread names all along, and a
# steady syscall load), their memory sampled each minute. A long-running
# mode must hold its memory flat after warm-up: everything it remembers per
# pid, tid or name has to be forgotten again. Needs root (it loads BPF) and
# bin/whyslow (make build). Prints a table, then what top showed: rows above
# 100% of one thread, and processes it could not name ("[pid N]").
#
# The exporter groups by command name (--group-by comm), the label set that
# churn stresses most. Environment: RATE (processes started a second, 20),
# THREADS (named threads each, 3).
set -eu
minutes=${1:-30}
rate=${RATE:-20}
threads=${THREADS:-3}
cd "$(dirname "$0")/.."
. examples/lib.sh
[ -x bin/whyslow ] || { echo "soak: bin/whyslow missing: make build" >&2; exit 1; }

tmp=$(mktemp -d /tmp/whyslow-soak.XXXXXX)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

go build -o "$tmp/churn" ./bench/churn
port=$(free_port)
bin/whyslow exporter --listen "127.0.0.1:$port" --group-by comm 2>"$tmp/exporter.err" &
exporter=$!
pids="$exporter"
# batch mode: the same capture and frames as the interactive view, drawn as text
bin/whyslow top --batch --threads --limit 50 >"$tmp/top.out" 2>"$tmp/top.err" &
top=$!
pids="$pids $top"
wait_port "$port"
sleep 3 # both attached
"$tmp/churn" -d "$((minutes * 60 + 30))s" -rate "$rate" -threads "$threads" >"$tmp/churn.out" &
churn=$!
pids="$pids $churn"

rss() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "-"; }
metric() { # name: the exporter's own metric, in MB
	curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null |
		awk -v m="$1" '$1 == m { printf "%.1f", $2 / 1048576; found = 1 } END { if (!found) printf "-" }'
}

echo "soak: $minutes min, $rate processes/s with $threads named threads each (exporter --group-by comm, top --batch --threads)"
printf '%6s %14s %15s %15s %11s\n' minute "exporter RSS" "exporter heap" "exporter sys" "top RSS"
m=0
while :; do
	kill -0 "$exporter" 2>/dev/null || { echo "soak: the exporter died:" >&2; cat "$tmp/exporter.err" >&2; exit 1; }
	kill -0 "$top" 2>/dev/null || { echo "soak: top died:" >&2; cat "$tmp/top.err" >&2; exit 1; }
	printf '%6d %11s MB %12s MB %12s MB %8s MB\n' "$m" "$(rss "$exporter")" \
		"$(metric go_memstats_heap_alloc_bytes)" "$(metric go_memstats_sys_bytes)" "$(rss "$top")"
	[ "$m" -ge "$minutes" ] && break
	sleep 60
	m=$((m + 1))
done

kill "$churn" 2>/dev/null || true
wait "$churn" 2>/dev/null || true
frames=$(grep -c '^whyslow top' "$tmp/top.out" || true)
# share columns are the 3rd to the 15th of a row (LOST .. OTHER)
over=$(awk '$1 ~ /^[0-9]+$/ { for (i = 3; i <= 15 && i <= NF; i++) if ($i ~ /^[0-9.]+$/ && $i + 0 > 100) { n++; print > "/dev/stderr"; break } } END { print n + 0 }' "$tmp/top.out" 2>"$tmp/over.txt")
unnamed=$(grep -c '^ *[0-9]* \[pid ' "$tmp/top.out" || true)
lost=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '$1 ~ /^whyslow_lost_events_total/ { n += $2 } END { print n + 0 }')
echo "top: $frames frames; thread rows above 100%: $over; rows named [pid N]: $unnamed"
head -5 "$tmp/over.txt"
echo "exporter: lost events (all sources, decode included): $lost"
