#!/bin/sh
# The OpenTelemetry Collector (a core distribution: the OTLP receiver into
# the file exporter), the second OTLP endpoint the export otlp tests read
# spans back from (`make test` only): built from scripts/otelcol, a module of
# its own that pins the Collector's release, so that its dependencies stay
# out of whyslow's module.
#
# As scripts/jaeger.sh does: in the background, at the lowest priority,
# holding $otelcol.lock, which the tests wait on (test/scenarios,
# startCollector); rebuilt when the module's files change (their digest is
# kept beside the binary). With WAIT=1 this script waits too.
set -eu
src="$(cd "$(dirname "$0")/otelcol" && pwd)"
bin="$(go env GOPATH)/bin"
otelcol="$bin/otelcol-whyslow"
digest="$(cd "$src" && cat go.mod go.sum main.go | sha256sum | cut -d' ' -f1)"
if [ -x "$otelcol" ] && [ "$(cat "$otelcol.sha256" 2>/dev/null)" = "$digest" ]; then
	exit 0
fi
mkdir -p "$bin"
if ! flock -n "$otelcol.lock" true; then
	echo "otelcol: a build is under way ($otelcol.log)" >&2
else
	echo "installing: the OpenTelemetry Collector (go build, in the background: $otelcol.log)" >&2
	nohup flock "$otelcol.lock" sh -c 'cd "$1" && nice -n 19 go build -trimpath -o "$2.tmp" . &&
		mv "$2.tmp" "$2" && echo "$3" > "$2.sha256"' \
		sh "$src" "$otelcol" "$digest" >"$otelcol.log" 2>&1 </dev/null &
	sleep 1 # the build holds the lock before anyone waits on it
fi
if [ "${WAIT:-}" = 1 ]; then
	flock "$otelcol.lock" true
	[ "$(cat "$otelcol.sha256" 2>/dev/null)" = "$digest" ] || { echo "otelcol: the build failed: $otelcol.log" >&2; exit 1; }
fi
